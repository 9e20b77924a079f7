//! The note an iteration's evidence is kept in: a readable summary, then the payload (the whole
//! evidence as JSON, gzipped and base64-encoded), attached to the commit in [`NOTES_REF`].

use std::collections::HashMap;
use std::io::{Read, Write};

use anyhow::{Context, Result, bail};
use base64::Engine;

use super::{Binding, Evidence, RunFile};
use crate::rules::records::CaseOutcome;
use crate::system::git::{NotesLock, Repo};

/// The notes ref the evidence lives in.
pub const NOTES_REF: &str = "refs/notes/cutile-perf";
/// The line after which the payload starts.
const PAYLOAD: &str = "payload (gzip, base64):";
const HEADER: &str = "cutile-perf evidence, schema 1";

impl Evidence {
    /// The note's readable summary: what `git log --notes` shows a reviewer, all of it from the payload.
    fn summary(&self) -> String {
        let mut text = format!(
            "{HEADER}\ntool: git-cutile-perf {}\niteration: {}\ngpu: {}\nstatistic: {}\nthresholds: {}\n",
            self.tool_version,
            self.iteration,
            self.gpu.as_deref().unwrap_or("none found"),
            self.statistic,
            self.thresholds,
        );
        text.push_str(&format!("rules: {}\n", self.ended.rules.name()));
        if let Some(state) = &self.gpu_state {
            text.push_str(&format!("gpu state: {}\n", state.gpu.state_line()));
        }
        for run in &self.runs {
            text.push_str(&format!("run {}: {}\n", run.name, summary(run)));
            if let Some(watch) = &run.gpu {
                text.push_str(&format!("  gpu {}\n", watch.describe()));
            }
        }
        text
    }

    /// The note's text: a summary, then the payload.
    pub fn to_note(&self) -> Result<String> {
        let mut text = self.summary();
        let json = serde_json::to_vec(self)?;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&json)?;
        let encoded = base64::engine::general_purpose::STANDARD.encode(gz.finish()?);
        text.push_str(PAYLOAD);
        text.push('\n');
        for line in encoded.as_bytes().chunks(76) {
            text.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
            text.push('\n');
        }
        Ok(text)
    }

    /// The evidence in a note's text; an error if the payload is missing or damaged.
    pub fn from_note(note: &str) -> Result<Evidence> {
        let Some((_, payload)) = note.split_once(&format!("{PAYLOAD}\n")) else {
            bail!("the note holds no cutile-perf evidence payload");
        };
        let encoded: String = payload.split_whitespace().collect();
        let compressed = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .context("the evidence payload is not base64")?;
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(&compressed[..])
            .read_to_end(&mut json)
            .context("the evidence payload is not gzip")?;
        serde_json::from_slice(&json).context("the evidence payload is not the expected JSON")
    }

    /// The lines of a note's readable summary that its payload does not give: a summary rewritten after
    /// the tool wrote it (`git notes edit`) tells a reader of `git log --notes` what was not measured.
    /// A line the payload gives that the note lacks is not one: older notes had fewer lines.
    pub fn rewritten_summary(&self, note: &str) -> Vec<String> {
        let Some((stored, _)) = note.split_once(PAYLOAD) else {
            return Vec::new();
        };
        let summary = self.summary();
        let mut given = summary.lines();
        let mut rewritten = Vec::new();
        for line in stored.lines().filter(|line| !line.trim().is_empty()) {
            // in order: a line the payload gives, after the ones matched before it
            match given.clone().position(|expected| expected == line) {
                Some(at) => {
                    given.nth(at);
                }
                None => rewritten.push(line.to_string()),
            }
        }
        rewritten
    }

    /// Adds the note to `commit` (replacing one there), bound to that commit, its text through stdin.
    pub fn attach(&self, repo: &Repo, commit: &str) -> Result<()> {
        let bound = Evidence {
            binding: Some(Binding::of(repo, commit)?),
            ..self.clone()
        };
        let note = bound.to_note()?;
        NotesLock::take(repo)?
            .update(NOTES_REF, |notes| {
                repo.git_input(
                    &["notes", "--ref", notes, "add", "-f", "-F", "-", commit],
                    &note,
                )
                .map(drop)
            })
            .with_context(|| format!("cannot write the evidence note on {commit}"))
    }

    /// Writes the note into the object store before the commit it is for exists, and returns its blob:
    /// what `repair` attaches ([`Evidence::attach_stashed`]) where a kill came between the commit and
    /// its note.
    pub fn stash(&self, repo: &Repo) -> Result<String> {
        let blob = repo
            .git_input(&["hash-object", "-w", "--stdin"], &self.to_note()?)
            .context("cannot keep the evidence note for the commit")?;
        Ok(blob.trim().to_string())
    }

    /// Attaches the note [`Evidence::stash`] kept as `blob` to `commit`, bound to it.
    pub fn attach_stashed(repo: &Repo, blob: &str, commit: &str) -> Result<()> {
        let note = repo.git(&["cat-file", "blob", blob])?;
        Evidence::from_note(&note)
            .with_context(|| format!("the evidence note kept as blob {blob}"))?
            .attach(repo, commit)
    }

    /// The evidence noted on `commit`: `None` without a note; an error for a note that is not ours.
    pub fn of(repo: &Repo, commit: &str) -> Result<Option<Evidence>> {
        let Some(text) = note(repo, commit)? else {
            return Ok(None);
        };
        Evidence::from_note(&text)
            .with_context(|| format!("the evidence note on {commit}"))
            .map(Some)
    }
}

/// Every commit with a note in [`NOTES_REF`] (full ids), with its note's blob.
pub fn noted_commits(repo: &Repo) -> Result<HashMap<String, String>> {
    if repo
        .git(&["rev-parse", "-q", "--verify", NOTES_REF])
        .is_err()
    {
        return Ok(HashMap::new());
    }
    let listed = repo.git(&["notes", "--ref", NOTES_REF, "list"])?;
    Ok(listed
        .lines()
        .filter_map(|line| {
            let (blob, annotated) = line.split_once(' ')?;
            Some((annotated.to_string(), blob.to_string()))
        })
        .collect())
}

/// The text of `commit`'s note in [`NOTES_REF`], if it has one.
pub fn note(repo: &Repo, commit: &str) -> Result<Option<String>> {
    let blob = repo.note(NOTES_REF, commit)?;
    blob.map(|bytes| String::from_utf8(bytes).context("the evidence note is not UTF-8"))
        .transpose()
}

/// A run in one line: its cases by outcome and the file's size.
fn summary(run: &RunFile) -> String {
    let format = run.records.format.name();
    let bytes = run.records.text.len();
    let Ok(cases) = run.cases() else {
        return format!("unreadable {format}, {bytes} bytes");
    };
    let count = |f: fn(&CaseOutcome) -> bool| cases.iter().filter(|c| f(&c.outcome)).count();
    format!(
        "{} cases: {} passed, {} skipped, {} failed; {format} {bytes} bytes{}",
        cases.len(),
        count(|o| *o == CaseOutcome::Passed),
        count(|o| *o == CaseOutcome::Skipped),
        count(|o| matches!(o, CaseOutcome::Failed(_) | CaseOutcome::Error(_))),
        if run.was_cut() {
            ", printed output cut"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::evidence::tests::evidence;

    #[test]
    fn a_note_round_trips_and_reads_as_a_summary() {
        let evidence = evidence(2);
        let note = evidence.to_note().unwrap();
        assert!(note.starts_with("cutile-perf evidence, schema 1\ntool: git-cutile-perf 0.1.0 ("));
        assert!(note.contains("\ngpu: NVIDIA H200, 9.0, 580.159.04\n"));
        assert!(note.contains(
            "\nthresholds: continue 5%, gain 2%, regression 2%, at most 25 iterations, 2 without a gain\n"
        ));
        assert!(note.contains("\nrules: ticked\n"));
        assert!(note.contains("\nrun correctness: 2 cases: 1 passed, 1 skipped, 0 failed; JUnit "));
        assert!(note.contains("\ngpu state: SM 1980/1980 MHz, 41 C, memory 612/143771 MiB\n"));
        assert!(note.contains("\nrun benchmark: 2 cases: 2 passed, 0 skipped, 0 failed; JUnit "));
        assert!(note.contains(
            "\n  gpu before SM 1980/1980 MHz, 41 C, memory 612/143771 MiB; after SM 1980/1980 MHz, 41 C, \
             memory 612/143771 MiB; others: pid 7 a.out (512 MiB)\n"
        ));
        assert!(note.lines().all(|l| l.len() <= 200));
        assert_eq!(Evidence::from_note(&note).unwrap(), evidence);
        assert_eq!(evidence.passed_cases().unwrap(), ["t::a"]);
    }

    #[test]
    fn ten_thousand_configs_fit_in_a_small_note() {
        let evidence = evidence(10_000);
        let raw = evidence.runs[1].records.text.len();
        let note = evidence.to_note().unwrap();
        assert!(raw > 3_000_000, "{raw}");
        // compressed well under a tenth of the raw JUnit: git stores and ships it easily
        assert!(note.len() < raw / 10, "{} of {raw}", note.len());
        let read = Evidence::from_note(&note).unwrap();
        let cases = read.run("benchmark").unwrap().cases().unwrap();
        let values =
            crate::rules::records::measurements(&cases, crate::rules::records::Statistic::Median)
                .unwrap();
        assert_eq!(values.len(), 10_000);
    }

    #[test]
    fn a_damaged_note_is_an_error() {
        let note = evidence(1).to_note().unwrap();
        assert!(Evidence::from_note("a note someone wrote").is_err());
        let damaged = note.replacen(
            "payload (gzip, base64):\nH",
            "payload (gzip, base64):\nX",
            1,
        );
        assert!(Evidence::from_note(&damaged).is_err());
    }

    #[test]
    fn a_summary_edited_after_the_fact_is_named_and_an_older_shorter_one_is_not() {
        let evidence = evidence(1);
        let note = evidence.to_note().unwrap();
        assert!(evidence.rewritten_summary(&note).is_empty());
        let edited = note
            .replace("\niteration: 3\n", "\niteration: 7\n")
            .replace("statistic: median", "statistic: min");
        assert_eq!(
            Evidence::from_note(&edited)
                .unwrap()
                .rewritten_summary(&edited),
            ["iteration: 7", "statistic: min"]
        );
        // written before the summary named the rules
        let older = note.replace("\nrules: ticked\n", "\n");
        assert!(evidence.rewritten_summary(&older).is_empty());
    }
}
