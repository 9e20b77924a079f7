//! The session as one self-contained HTML page (`git cutile-perf report`, `table --write`): the session's
//! facts, the results table, the plot, and for each iteration what was tried, what it measured config by
//! config (with intervals), the decision and its reason, the code change, the compile facts and the
//! cached diagnoses.
//!
//! Built from the trailers (always there) and, where present, the evidence notes, the diagnoses cache
//! and the commits' diffs. A record that lacks them (a clone without `refs/notes/cutile-perf`, a log copied out of its
//! repository) still renders, and the page says what it lacks. [`gather`] reads the repository;
//! [`html`] is pure, so the same record always gives the same bytes.

mod html;

use std::collections::BTreeMap;

use anyhow::Result;

use crate::features::diagnose::cache::{self, Note};
use crate::record::evidence::{self, Evidence, NOTES_REF};
use crate::record::history::History;
use crate::record::replay;
use crate::record::session::{Iteration, Session};
use crate::rules::compile::CompileFacts;
use crate::rules::decision::Attempt;
use crate::rules::decision::Estimate;
use crate::system::git::Repo;

pub use html::html;

/// Where `report` and `table --write` put the page, under the sandbox.
pub const DEFAULT_FILE: &str = "perf_results.html";

/// A diff longer than this shows its first lines and says how many it left out.
const DIFF_LINES: usize = 400;

/// Everything the page shows.
#[derive(Debug, Clone)]
pub struct Material {
    pub session: Session,
    pub entries: Vec<Entry>,
    /// What the whole record lacks, in words (each iteration also says what it lacks).
    pub missing: Vec<String>,
}

/// One iteration: its record, and what the repository adds to it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The iteration commit; none when the record was read from a copied log.
    pub commit: Option<String>,
    pub iteration: Iteration,
    /// What its evidence note holds; none without a note.
    pub noted: Option<Noted>,
    /// The code it changed (the attempt's, for a reverted or crashed one); none when not available.
    pub diff: Option<String>,
    /// What `diagnose` found in that code, when it was run.
    pub diagnosis: Option<Note>,
}

/// What an iteration's evidence note adds to its trailers.
#[derive(Debug, Clone)]
pub struct Noted {
    pub tool_version: String,
    /// The paired rounds' estimate, recomputed as `verify` does; none for the baseline, a single run,
    /// or an attempt that crashed.
    pub estimate: Option<Estimate>,
    pub compile: Option<CompileFacts>,
    /// The GPU as the iteration began, in words.
    pub gpu_state: Option<String>,
    /// Each run by name, with the GPU around it where it was watched.
    pub runs: Vec<(String, Option<String>)>,
}

impl Material {
    /// A record read from trailers alone (a session's log copied out of its repository): `missing`
    /// says what the page cannot show.
    pub fn from_trailers(
        session: Session,
        iterations: Vec<Iteration>,
        missing: Vec<String>,
    ) -> Self {
        let entries = iterations
            .into_iter()
            .map(|iteration| Entry {
                commit: None,
                iteration,
                noted: None,
                diff: None,
                diagnosis: None,
            })
            .collect();
        Material {
            session,
            entries,
            missing,
        }
    }

    /// The paired estimates by iteration number, for the plot's error bars.
    pub fn estimates(&self) -> BTreeMap<u32, Estimate> {
        self.entries
            .iter()
            .filter_map(|e| {
                let estimate = e.noted.as_ref()?.estimate.clone()?;
                Some((e.iteration.number, estimate))
            })
            .collect()
    }

    /// What the page had to do without: the record's lacks, then the iterations without a note
    /// (when some have one) or without their code change.
    pub fn lacks(&self) -> Vec<String> {
        let mut lacks = self.missing.clone();
        let without = |lacking: fn(&Entry) -> bool| -> Vec<String> {
            self.entries
                .iter()
                .filter(|e| lacking(e))
                .map(|e| e.iteration.number.to_string())
                .collect()
        };
        let no_note = without(|e| e.noted.is_none());
        if !no_note.is_empty() && no_note.len() < self.entries.len() {
            lacks.push(format!(
                "the evidence notes of iterations {}",
                no_note.join(", ")
            ));
        }
        let no_diff = without(|e| e.iteration.number > 0 && e.diff.is_none());
        if !no_diff.is_empty() {
            lacks.push(format!(
                "the code changes of iterations {} (their commits are not in this repository)",
                no_diff.join(", ")
            ));
        }
        lacks
    }

    pub fn iterations(&self) -> Vec<Iteration> {
        self.entries.iter().map(|e| e.iteration.clone()).collect()
    }
}

/// The session on the checked-out branch with its evidence notes and diffs. A damaged note or a diff
/// git cannot give is left out and said, never an error: the page shows what there is.
pub fn gather(repo: &Repo, history: &History) -> Result<Material> {
    let (notes, mut missing) = read_notes(repo, history)?;
    let baseline_passed = baseline_passed(&notes, history);
    let entries = history
        .iterations
        .iter()
        .map(|(commit, it)| Entry {
            commit: Some(commit.clone()),
            iteration: it.clone(),
            noted: notes
                .get(commit)
                .map(|e| noted(e, &history.session, it, &baseline_passed)),
            diff: (it.number > 0)
                .then(|| diff_of(repo, code_commit(commit, it)))
                .flatten(),
            diagnosis: cache::recall(repo, code_commit(commit, it)),
        })
        .collect::<Vec<_>>();
    if notes.is_empty() {
        missing.push(format!(
            "the evidence notes ({NOTES_REF}): no intervals, GPU state or compile facts; a clone gets them with \
             `git fetch origin {NOTES_REF}:{NOTES_REF}`"
        ));
    }
    Ok(Material {
        session: history.session.clone(),
        entries,
        missing,
    })
}

/// The paired estimates of the session's iterations, from their evidence notes (what the plot's error
/// bars need, without the diffs).
pub fn estimates(repo: &Repo, history: &History) -> Result<BTreeMap<u32, Estimate>> {
    let (notes, _) = read_notes(repo, history)?;
    let baseline_passed = baseline_passed(&notes, history);
    Ok(history
        .iterations
        .iter()
        .filter_map(|(commit, it)| {
            let estimate = estimate_of(notes.get(commit)?, &history.session, it, &baseline_passed)?;
            Some((it.number, estimate))
        })
        .collect())
}

/// The evidence of each iteration commit that has a readable note, and a sentence for each note that
/// could not be read.
fn read_notes(repo: &Repo, history: &History) -> Result<(BTreeMap<String, Evidence>, Vec<String>)> {
    let listed = evidence::noted_commits(repo)?;
    let mut notes = BTreeMap::new();
    let mut unreadable = Vec::new();
    for (commit, it) in &history.iterations {
        let Some(blob) = listed.get(commit) else {
            continue;
        };
        let read = repo
            .git(&["cat-file", "blob", blob])
            .and_then(|text| Evidence::from_note(&text));
        match read {
            Ok(evidence) => {
                notes.insert(commit.clone(), evidence);
            }
            Err(err) => unreadable.push(format!(
                "iteration {}'s evidence note, which cannot be read: {err:#}",
                it.number
            )),
        }
    }
    Ok((notes, unreadable))
}

/// The correctness cases the baseline passed, which a later attempt may not skip (none without its note).
fn baseline_passed(notes: &BTreeMap<String, Evidence>, history: &History) -> Vec<String> {
    notes
        .get(&history.baseline_commit)
        .and_then(|e| e.passed_cases().ok())
        .unwrap_or_default()
}

fn estimate_of(
    evidence: &Evidence,
    session: &Session,
    it: &Iteration,
    baseline_passed: &[String],
) -> Option<Estimate> {
    if it.number == 0 {
        return None;
    }
    match replay::of_evidence(evidence, session, baseline_passed).attempt {
        Attempt::Measured { paired, .. } => Some(paired.estimate),
        _ => None,
    }
}

fn noted(
    evidence: &Evidence,
    session: &Session,
    it: &Iteration,
    baseline_passed: &[String],
) -> Noted {
    Noted {
        tool_version: evidence.tool_version.clone(),
        estimate: estimate_of(evidence, session, it, baseline_passed),
        compile: evidence.compile.clone().filter(|c| !c.is_empty()),
        gpu_state: evidence.gpu_state.as_ref().map(|s| s.gpu.state_line()),
        runs: evidence
            .runs
            .iter()
            .map(|run| (run.name.clone(), run.gpu.as_ref().map(|w| w.describe())))
            .collect(),
    }
}

/// The commit holding iteration `it`'s code: a reverted or crashed one's attempt, else its own.
fn code_commit<'a>(commit: &'a str, it: &'a Iteration) -> &'a str {
    it.attempt.as_deref().unwrap_or(commit)
}

/// What `changed` changed; none when git cannot say or it changed nothing.
fn diff_of(repo: &Repo, changed: &str) -> Option<String> {
    let parent = format!("{changed}^");
    let diff = repo
        .git(&["diff", "--no-color", "--no-ext-diff", &parent, changed])
        .ok()
        .filter(|d| !d.trim().is_empty())?;
    let lines: Vec<&str> = diff.lines().collect();
    if lines.len() <= DIFF_LINES {
        return Some(diff);
    }
    Some(format!(
        "{}\n... {} more lines (`git show {changed}`)\n",
        lines[..DIFF_LINES].join("\n"),
        lines.len() - DIFF_LINES
    ))
}
