//! The evidence behind each verdict, kept in a git note on the iteration commit (`refs/notes/cutile-perf`).
//!
//! `sandbox/` is scratch: the next step overwrites its JUnit files. The note keeps them, with the tool's
//! version, the GPU and the thresholds, so that `verify` can recompute every trailer from the raw runs and
//! a clone can carry them (`git push origin refs/notes/cutile-perf`). A note is a readable summary (what
//! `git log --notes=cutile-perf` shows) followed by the payload: the whole evidence as JSON, gzipped and
//! base64-encoded in lines of 76 characters, so that 10,000 configs stay a few hundred kilobytes.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};

use anyhow::{Context, Result, bail};
use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::compile::{CompileFacts, CompiledKernel};
use crate::decision::Thresholds;
use crate::git::Repo;
use crate::gpu::{GpuProcess, GpuState};
use crate::records::{CaseOutcome, CaseReport, RecordFile};
use crate::session::Session;
use crate::trailers::Block;
use crate::verdict::Rules;

/// The notes ref the evidence lives in.
pub const NOTES_REF: &str = "refs/notes/cutile-perf";
/// The line after which the payload starts.
const PAYLOAD: &str = "payload (gzip, base64):";
const HEADER: &str = "cutile-perf evidence, schema 1";
/// The most of one case's printed output (`<system-out>`, `<system-err>`) a note keeps: a kernel that
/// prints megabytes per call would otherwise make a note of tens of megabytes.
const OUTPUT_KEPT: usize = 64 * 1024;
/// What stands where printed output was cut, with how many bytes.
const CUT: &str = "cutile-perf: cut from this output";

/// One pytest run's records file, exactly as it was read and parsed, and its format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    /// `correctness`; `benchmark-<n>` at the baseline; `round-<n>-candidate` and `round-<n>-baseline` for
    /// a step's paired rounds, `confirm-round-...` for the second measurement of a suspicious gain.
    pub name: String,
    #[serde(flatten)]
    pub records: RecordFile,
    /// The GPU just before and just after a benchmark run (none in older notes, or without a GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuWatch>,
    /// For each side's first round (in older notes, a compile run of its own, `compile-<side>`): the
    /// kernels that side's code compiled, as cuda-tile dumped them, that no re-roll compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<Vec<CompiledKernel>>,
    /// The GPU that ran this benchmark run, as `CUDA_VISIBLE_DEVICES` named it (`step --gpus`); none in
    /// older notes or where the environment chose it: one GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_device: Option<String>,
}

/// The GPU's state around one run: clocks and temperature as it started and ended, and who else used
/// the GPU then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuWatch {
    pub before: Option<GpuState>,
    pub after: Option<GpuState>,
}

impl GpuWatch {
    /// Processes seen on the GPU before or after the run (the run's own had not started or had ended).
    pub fn others(&self) -> Vec<GpuProcess> {
        let mut seen: Vec<GpuProcess> = Vec::new();
        for state in [&self.before, &self.after].into_iter().flatten() {
            for p in &state.processes {
                if !seen.iter().any(|s| s.pid == p.pid) {
                    seen.push(p.clone());
                }
            }
        }
        seen
    }

    /// `before SM 1980/1980 MHz, 41 C; after SM 1980/1980 MHz, 47 C; others: pid 7 a.out`
    pub fn describe(&self) -> String {
        let side = |label: &str, state: &Option<GpuState>| match state {
            Some(state) => format!("{label} {}", state.gpu.state_line()),
            None => format!("{label} unread"),
        };
        let mut text = format!(
            "{}; {}",
            side("before", &self.before),
            side("after", &self.after)
        );
        let others = self.others();
        if !others.is_empty() {
            text += &format!("; others: {}", crate::gpu::describe_processes(&others));
        }
        text
    }
}

impl RunFile {
    /// The run named `name` with the file it wrote, as it was read for its outcome.
    pub fn new(name: &str, records: RecordFile) -> RunFile {
        RunFile {
            name: name.to_string(),
            records,
            gpu: None,
            compiled: None,
            cuda_device: None,
        }
    }

    /// Whether this is side `side`'s run in round `round` of the rounds named `prefix`, on any GPU:
    /// `<prefix>-<round>-<side>`, or `<prefix>-<round>-gpu<gpu>-<side>` (`paired::run_name`).
    pub fn of_round(&self, prefix: &str, round: usize, side: &str) -> bool {
        let Some(rest) = self.name.strip_prefix(&format!("{prefix}-{round}-")) else {
            return false;
        };
        rest == side
            || rest
                .strip_prefix("gpu")
                .and_then(|rest| rest.strip_suffix(side)?.strip_suffix('-'))
                .is_some_and(|gpu| !gpu.is_empty() && !gpu.contains('-'))
    }

    pub fn cases(&self) -> Result<Vec<CaseReport>> {
        self.records
            .cases()
            .with_context(|| format!("the {} run's records", self.name))
    }

    /// The run with each case's printed output beyond [`OUTPUT_KEPT`] cut to its head, its tail and the
    /// record lines between them, a line saying how much was cut. Kept whole where the cut would change
    /// what its cases read as: the replay of the verdict reads them.
    fn bounded(self) -> RunFile {
        let Some(text) = bound_output(&self.records.text) else {
            return self;
        };
        let cut = RunFile {
            records: RecordFile {
                text,
                ..self.records.clone()
            },
            ..self.clone()
        };
        match (self.cases(), cut.cases()) {
            (Ok(whole), Ok(kept)) if whole == kept => cut,
            _ => self,
        }
    }

    /// Whether some of its printed output was cut ([`RunFile::bounded`]).
    fn was_cut(&self) -> bool {
        self.records.text.contains(CUT)
    }
}

/// `text` with the content of each `<system-out>` and `<system-err>` longer than [`OUTPUT_KEPT`] cut;
/// `None` where none is.
fn bound_output(text: &str) -> Option<String> {
    let mut bounded = None;
    for tag in ["system-out", "system-err"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let source = bounded.as_deref().unwrap_or(text);
        let mut out = String::new();
        let mut rest = source;
        let mut cut_any = false;
        while let Some(at) = rest.find(&open) {
            let body = at + open.len();
            let Some(length) = rest[body..].find(&close) else {
                break;
            };
            out.push_str(&rest[..body]);
            let content = &rest[body..body + length];
            cut_any |= content.len() > OUTPUT_KEPT;
            match content.len() > OUTPUT_KEPT {
                true => out.push_str(&cut_output(content)),
                false => out.push_str(content),
            }
            rest = &rest[body + length..];
        }
        if cut_any {
            out.push_str(rest);
            bounded = Some(out);
        }
    }
    bounded
}

/// Printed output cut to its first and last lines (half of [`OUTPUT_KEPT`] each) and the record lines
/// (`Cutile: ...`) between them; cut at line ends, so an escaped character is never split.
fn cut_output(content: &str) -> String {
    let bytes = content.as_bytes();
    let half = OUTPUT_KEPT / 2;
    let head = bytes[..half]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let from = bytes.len() - half;
    let tail = bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |at| from + at + 1);
    let middle = &content[head..tail];
    let records: String = middle
        .split_inclusive('\n')
        .filter(|line| line.trim_start().starts_with("Cutile:"))
        .collect();
    format!(
        "{}[{CUT}: {} bytes; the record lines in them kept]\n{records}{}",
        &content[..head],
        middle.len() - records.len(),
        &content[tail..]
    )
}

/// Everything an iteration's verdict was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub tool_version: String,
    pub iteration: u32,
    /// `name, compute capability, driver` when a GPU was seen.
    pub gpu: Option<String>,
    /// The GPU's clocks, memory and other processes when the iteration began (none in older notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_state: Option<GpuState>,
    pub statistic: String,
    pub thresholds: Thresholds,
    /// In the order they ran.
    pub runs: Vec<RunFile>,
    /// What the compiler made of the iteration's kernels; none without a GPU, without the budget for
    /// it, or in a note written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileFacts>,
    /// The commit the note was written for, as it was then (none in notes written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<Binding>,
    /// How the step's measurement ended where its runs' files cannot say, and by which revision of the
    /// rounds' rules (none in older notes: the first).
    #[serde(
        default = "Ended::of_older_note",
        skip_serializing_if = "Ended::is_empty"
    )]
    pub ended: Ended,
}

/// What a step's live measurement knew that its runs' files do not hold, kept beside them so that the
/// replay of the evidence (`replay::attempt`) is the attempt `step` recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ended {
    /// A run that died, timed out or gave no usable record (its file may be missing): why, as its
    /// process ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<Crash>,
    /// Each set of rounds (`round`, `confirm-round`) that was decided on its means because no further
    /// round fitted: why (the budget left, a round's length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<Undecided>,
    /// The revision of the rounds' rules that decided them; a note written before it was kept was
    /// decided by the first.
    #[serde(default = "first_rules")]
    pub rules: Rules,
}

fn first_rules() -> Rules {
    Rules::First
}

impl Ended {
    /// What a note written before `Ended` was kept says: nothing, under the first rules.
    fn of_older_note() -> Ended {
        Ended {
            rules: Rules::First,
            ..Ended::default()
        }
    }

    /// Whether it says no more than an older note without it.
    pub fn is_empty(&self) -> bool {
        *self == Ended::of_older_note()
    }

    /// Why the rounds named `prefix` were decided on their means, where the step said so.
    pub fn undecided(&self, prefix: &str) -> Option<&str> {
        self.undecided
            .iter()
            .find(|undecided| undecided.rounds == prefix)
            .map(|undecided| undecided.why.as_str())
    }
}

/// A crash of a step, in the stage it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crash {
    pub stage: Stage,
    pub why: String,
}

/// The stage of a step a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Correctness,
    Rounds,
}

/// A set of rounds decided on its means, and why no further round was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Undecided {
    pub rounds: String,
    pub why: String,
}

/// What an evidence note measured: the commit and what it is made of. A note copied onto another commit,
/// or a commit made again with the same message over another tree, no longer matches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    pub commit: String,
    pub tree: String,
    pub parents: Vec<String>,
    /// The tree of the attempt a reverted or crashed iteration names: the code that was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_tree: Option<String>,
    /// The commit's trailer block.
    pub trailers: String,
}

impl Binding {
    /// `commit` (a full id) as git holds it now (objects read without replacements, in-process: `verify`
    /// reads every commit's). An attempt the trailers name that is not a commit here has no tree.
    pub fn of(repo: &Repo, commit: &str) -> Result<Binding> {
        let (tree, parents) = repo.commit_parts(commit)?;
        let block = Block::from_message(&repo.message(commit)?);
        let attempt_tree = block
            .get("Attempt")?
            .and_then(|attempt| repo.commit_parts(attempt).ok())
            .map(|(tree, _)| tree);
        Ok(Binding {
            commit: commit.to_string(),
            tree,
            parents,
            attempt_tree,
            trailers: block.render(),
        })
    }

    /// What differs between the commit the note was written for (`self`) and the one it sits on, in words.
    pub fn differences(&self, now: &Binding) -> Vec<String> {
        let short = crate::session::short;
        let mut found = Vec::new();
        if self.commit != now.commit {
            found.push(format!("it was written for commit {}", short(&self.commit)));
        }
        if self.tree != now.tree {
            found.push(format!(
                "it measured tree {}, the commit holds {}",
                short(&self.tree),
                short(&now.tree)
            ));
        }
        if self.parents != now.parents {
            found.push(format!(
                "it was written on parent(s) {}, the commit has {}",
                self.parents
                    .iter()
                    .map(|p| short(p))
                    .collect::<Vec<_>>()
                    .join(" "),
                now.parents
                    .iter()
                    .map(|p| short(p))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        if self.attempt_tree != now.attempt_tree {
            found.push("the attempt it measured is not the one the commit names".to_string());
        }
        if self.trailers != now.trailers {
            found.push("its trailers are not the commit's".to_string());
        }
        found
    }
}

impl Evidence {
    /// The evidence of iteration `iteration` of `session`: its runs' JUnit files, with this tool's
    /// version and the GPU's state as the iteration began.
    pub fn new(
        session: &Session,
        iteration: u32,
        gpu_state: Option<GpuState>,
        runs: Vec<RunFile>,
    ) -> Evidence {
        Evidence {
            tool_version: crate::VERSION.to_string(),
            iteration,
            gpu: gpu_state.as_ref().map(|s| s.gpu.identity()),
            gpu_state,
            statistic: session.statistic.to_string(),
            thresholds: session.thresholds,
            runs: runs.into_iter().map(RunFile::bounded).collect(),
            compile: None,
            binding: None,
            ended: Ended::default(),
        }
    }

    /// The same evidence with how the step's measurement ended.
    pub fn with_ended(self, ended: Ended) -> Evidence {
        Evidence { ended, ..self }
    }

    /// The same evidence with the iteration's compile facts (`diagnose::facts::for_iteration`).
    pub fn with_compile(self, compile: Option<CompileFacts>) -> Evidence {
        Evidence { compile, ..self }
    }

    pub fn run(&self, name: &str) -> Option<&RunFile> {
        self.runs.iter().find(|r| r.name == name)
    }

    /// The perf cases the benchmark runs measured (JUnit ids, sorted, each once): what a step's GPUs share.
    pub fn perf_cases(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for run in self
            .runs
            .iter()
            .filter(|run| run.name.starts_with("benchmark") || run.name.contains("round-"))
        {
            ids.extend(run.cases()?.into_iter().map(|case| case.id));
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The GPU that measured each perf case of the rounds (`RunFile::cuda_device`; `-` where none is
    /// named: one GPU, as in older notes). `Err` names a case measured on two GPUs: its rounds would pair
    /// a side on one GPU with the other side on another.
    pub fn gpu_of_cases(&self) -> Result<BTreeMap<String, String>, String> {
        let mut gpu_of: BTreeMap<String, String> = BTreeMap::new();
        for run in self.runs.iter().filter(|run| run.name.contains("round-")) {
            let gpu = run.cuda_device.as_deref().unwrap_or("-");
            for case in run.cases().map_err(|e| format!("{e:#}"))? {
                let first = gpu_of.entry(case.id).or_insert_with(|| gpu.to_string());
                if first != gpu {
                    return Err(format!(
                        "the run {} measured a case on GPU {gpu} that other runs measured on GPU {first}",
                        run.name
                    ));
                }
            }
        }
        Ok(gpu_of)
    }

    /// The ids of the correctness cases that passed (what a later step may not skip).
    pub fn passed_cases(&self) -> Result<Vec<String>> {
        let Some(run) = self.run("correctness") else {
            return Ok(Vec::new());
        };
        Ok(run
            .cases()?
            .into_iter()
            .filter(|c| c.outcome == CaseOutcome::Passed)
            .map(|c| c.id)
            .collect())
    }

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
        repo.git_input(
            &["notes", "--ref", NOTES_REF, "add", "-f", "-F", "-", commit],
            &bound.to_note()?,
        )
        .with_context(|| format!("cannot write the evidence note on {commit}"))?;
        Ok(())
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
    use crate::records::RecordFormat;

    /// A benchmark JUnit file of `n` configs as TileGym writes it.
    fn benchmark_junit(n: usize) -> String {
        let mut xml = String::from(
            r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">"#,
        );
        for i in 0..n {
            xml.push_str(&format!(
                r#"<testcase classname="tests.ops.test_rms_norm.Test_RMSNorm" name="test_perf[cutile-static_persistent-{i}-1024-torch.float16]" time="0.5"><properties><property name="benchmark" value="{{'cutile': {{'forward': {{'median': {:.6}, 'mean': 0.3, 'min': 0.2}}}}}}"/></properties><system-out>Cutile: ... ms</system-out></testcase>"#,
                0.2 + i as f64 * 1e-5
            ));
        }
        xml.push_str("</testsuite></testsuites>");
        xml
    }

    fn junit(text: String) -> RecordFile {
        RecordFile {
            format: RecordFormat::Junit,
            text,
        }
    }

    fn h200(processes: &str) -> GpuState {
        GpuState {
            gpu: crate::gpu::Gpu::parse(
                "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
            )
            .unwrap(),
            processes: crate::gpu::parse_processes(processes),
        }
    }

    fn evidence(n: usize) -> Evidence {
        Evidence {
            tool_version: crate::VERSION.to_string(),
            iteration: 3,
            gpu: Some("NVIDIA H200, 9.0, 580.159.04".into()),
            gpu_state: Some(h200("")),
            statistic: "median".into(),
            thresholds: Thresholds::DEFAULT,
            runs: vec![
                RunFile::new("correctness", junit(r#"<testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><skipped/></testcase></testsuite>"#.into())),
                RunFile {
                    name: "benchmark".into(),
                    records: junit(benchmark_junit(n)),
                    gpu: Some(GpuWatch {
                        before: Some(h200("")),
                        after: Some(h200("7, a.out, 512\n")),
                    }),
                    compiled: None,
                    cuda_device: None,
                },
            ],
            compile: None,
            binding: None,
            ended: Ended::default(),
        }
    }

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
            crate::records::measurements(&cases, crate::records::Statistic::Median).unwrap();
        assert_eq!(values.len(), 10_000);
    }

    #[test]
    fn notes_written_before_the_gpu_was_watched_still_read() {
        let mut old = evidence(1);
        old.gpu_state = None;
        old.runs[1].gpu = None;
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("gpu_state") && !json.contains("\"before\""));
        assert_eq!(serde_json::from_str::<Evidence>(&json).unwrap(), old);
    }

    #[test]
    fn a_note_names_the_rules_that_decided_it_and_older_notes_read_as_the_first() {
        let evidence = evidence(1);
        let json = serde_json::to_value(&evidence).unwrap();
        assert_eq!(json["ended"], serde_json::json!({"rules": "ticked"}));
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("ended");
        let read: Evidence = serde_json::from_value(older).unwrap();
        assert_eq!(read.ended.rules, Rules::First);
        let mut crashed_older = json;
        crashed_older["ended"] = serde_json::json!({"crash": {"stage": "rounds", "why": "x"}});
        let read: Evidence = serde_json::from_value(crashed_older).unwrap();
        assert_eq!(read.ended.rules, Rules::First);
        assert!(read.ended.crash.is_some());
    }

    #[test]
    fn a_run_keeps_its_format_beside_its_bytes_and_older_notes_read_as_junit() {
        let run = &evidence(1).runs[0];
        let json = serde_json::to_value(run).unwrap();
        assert_eq!(json["name"], "correctness");
        assert_eq!(json["format"], "junit");
        assert_eq!(json["text"], run.records.text.as_str());
        let old = serde_json::json!({"name": "correctness", "junit": run.records.text});
        assert_eq!(&serde_json::from_value::<RunFile>(old).unwrap(), run);
    }

    #[test]
    fn a_round_run_is_known_by_its_name_on_any_gpu() {
        let run = |name: &str| RunFile::new(name, junit(String::new()));
        assert!(run("round-2-candidate").of_round("round", 2, "candidate"));
        assert!(run("round-2-gpu1-candidate").of_round("round", 2, "candidate"));
        assert!(!run("round-2-gpu1-candidate").of_round("round", 2, "baseline"));
        assert!(!run("round-2-gpu1-candidate").of_round("round", 1, "candidate"));
        assert!(!run("round-12-candidate").of_round("round", 1, "candidate"));
        assert!(!run("confirm-round-2-candidate").of_round("round", 2, "candidate"));
        assert!(run("confirm-round-2-gpu0-baseline").of_round("confirm-round", 2, "baseline"));
        assert!(!run("round-2-gpu-candidate").of_round("round", 2, "candidate"));
    }

    #[test]
    fn each_case_is_measured_on_one_gpu_and_older_notes_on_one() {
        let run = |name: &str, gpu: Option<&str>| RunFile {
            cuda_device: gpu.map(str::to_string),
            ..RunFile::new(name, junit(benchmark_junit(1)))
        };
        let mut evidence = evidence(1);
        let case = "tests.ops.test_rms_norm.Test_RMSNorm::test_perf[cutile-static_persistent-0-1024-torch.float16]";
        evidence.runs = vec![
            run("round-1-candidate", None),
            run("round-1-baseline", None),
        ];
        assert_eq!(
            evidence.gpu_of_cases().unwrap(),
            BTreeMap::from([(case.to_string(), "-".to_string())])
        );
        evidence.runs = vec![
            run("round-1-gpu1-candidate", Some("1")),
            run("round-1-gpu1-baseline", Some("1")),
            run("confirm-round-1-gpu1-baseline", Some("1")),
        ];
        assert_eq!(
            evidence.gpu_of_cases().unwrap(),
            BTreeMap::from([(case.to_string(), "1".to_string())])
        );
        evidence.runs.push(run("round-2-baseline", Some("0")));
        assert_eq!(
            evidence.gpu_of_cases().unwrap_err(),
            "the run round-2-baseline measured a case on GPU 0 that other runs measured on GPU 1"
        );
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

    #[test]
    fn printed_output_is_kept_bounded_with_its_record_lines_and_the_cut_said() {
        let noise = "x".repeat(99) + "\n";
        let printed = format!(
            "{}Cutile: {{'forward': {{'median': 0.5}}}} ms\n{}",
            noise.repeat(20_000),
            noise.repeat(20_000)
        );
        let xml = format!(
            r#"<testsuite><testcase classname="t" name="test_perf[a]"><system-out>{printed}</system-out><system-err>{}</system-err></testcase></testsuite>"#,
            noise.repeat(40_000)
        );
        let session = crate::session::tests::session();
        let whole = RunFile::new("round-1-candidate", junit(xml));
        let evidence = Evidence::new(&session, 1, None, vec![whole.clone()]);
        let kept = &evidence.runs[0];
        assert!(whole.records.text.len() > 8_000_000);
        assert!(
            kept.records.text.len() < 3 * OUTPUT_KEPT,
            "{}",
            kept.records.text.len()
        );
        assert_eq!(kept.cases().unwrap(), whole.cases().unwrap());
        assert!(kept.cases().unwrap()[0].record.is_some());
        assert!(kept.records.text.contains(&format!("[{CUT}: ")));
        let note = evidence.to_note().unwrap();
        assert!(note.contains("printed output cut\n"), "{}", &note[..400]);
        // a short output is kept as it was
        let short = RunFile::new("correctness", junit(benchmark_junit(2)));
        assert_eq!(short.clone().bounded(), short);
    }
}
