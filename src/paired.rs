//! Paired measurement: every `step` benchmarks the current baseline's code beside the candidate, in
//! alternating rounds (A B, B A, ...) on the same GPU, until [`verdict`] can decide or the budget cannot
//! fit another round; each round after the first in fresh workers. The baseline's code runs from a
//! detached worktree of its commit under the git dir, so the user's work tree is never touched; the
//! worktree is removed whatever happens.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::benchmark_run;
use crate::decision::Decided;
use crate::evidence::RunFile;
use crate::git::Repo;
use crate::pytest::BenchmarkRun;
use crate::session::Session;
use crate::verdict::{self, NoiseFloor, Round, Verdict};
use crate::workers::Side;

/// A detached worktree of a commit, removed when dropped.
pub struct BaselineTree<'a> {
    repo: &'a Repo,
    pub path: PathBuf,
}

impl<'a> BaselineTree<'a> {
    pub fn add(repo: &'a Repo, commit: &str) -> Result<BaselineTree<'a>> {
        let path = repo.git_path(&format!("cutile-perf/baseline-{}", std::process::id()))?;
        if path.exists() {
            // left by a killed run of this same pid number: it is ours to replace
            let _ = repo.git(&["worktree", "remove", "--force", &path.to_string_lossy()]);
            let _ = std::fs::remove_dir_all(&path);
        }
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            &path.to_string_lossy(),
            commit,
        ])
        .context("could not check out the baseline's code beside the work tree")?;
        let tree = BaselineTree { repo, path };
        crate::ignored::copy_into(repo, &tree.path)?;
        Ok(tree)
    }
}

impl Drop for BaselineTree<'_> {
    fn drop(&mut self) {
        // after Ctrl-C too: git is not cut short while it puts things back
        crate::process::restoring(|| {
            let _ = self.repo.git(&[
                "worktree",
                "remove",
                "--force",
                &self.path.to_string_lossy(),
            ]);
            let _ = self.repo.git(&["worktree", "prune"]);
        });
    }
}

/// How the paired rounds ended.
pub enum Paired {
    Decided(Decided),
    Crashed(String),
    Interrupted,
}

/// Both sides of one step's paired rounds, and what decides between them.
pub struct Rounds<'a> {
    pub candidate: Side<'a>,
    pub baseline: Side<'a>,
    pub session: &'a Session,
    pub floor: NoiseFloor,
    pub deadline: Instant,
    /// Whether the sides' processes have measured a round: the next round is then measured by fresh ones.
    pub measured: bool,
    /// No re-roll: after the first round, whether the candidate compiled and launched what the baseline
    /// does (it may add what it read to the runs); then nothing more is measured.
    pub no_reroll: Option<AlikeCheck<'a>>,
}

/// The no-re-roll check the rounds make after the first round.
pub type AlikeCheck<'a> = &'a dyn Fn(&mut Vec<RunFile>) -> bool;

/// Runs rounds of the baseline and the candidate until the verdict is decided; when the next round would
/// not fit before the deadline, decides on what there is and says so. Each run's JUnit file is added to
/// `evidence`, named `<prefix>-<round>-<side>`.
pub fn measure(sides: &mut Rounds, prefix: &str, evidence: &mut Vec<RunFile>) -> Result<Paired> {
    let limits = &sides.session.thresholds;
    let floor = &sides.floor;
    let mut rounds: Vec<Round> = Vec::new();
    let mut durations: Vec<Duration> = Vec::new();
    // round 1 runs every case; a later one only those of the configs still open
    let mut open: Option<Vec<String>> = None;
    loop {
        let started = Instant::now();
        if sides.measured {
            // a round is an independent sample only in processes of its own (verdict.rs says why); both
            // start before either measures, so their start-ups overlap
            sides.candidate.redraw();
            sides.baseline.redraw();
        }
        let candidate_first = verdict::candidate_first(rounds.len());
        let mut round = Round {
            baseline: Vec::new(),
            candidate: Vec::new(),
        };
        let ours: Vec<u32> = [&sides.candidate, &sides.baseline]
            .iter()
            .filter_map(|side| side.worker_pid())
            .collect();
        for run_candidate in [candidate_first, !candidate_first] {
            let (runner, side, into) = if run_candidate {
                (&mut sides.candidate, "candidate", &mut round.candidate)
            } else {
                (&mut sides.baseline, "baseline", &mut round.baseline)
            };
            let (measured, file) = benchmark_run::benchmark(
                runner,
                sides.session.statistic,
                &format!("{prefix}-{}-{side}", rounds.len() + 1),
                &format!("round {} {side}", rounds.len() + 1),
                sides.session.gpu.is_some(),
                &ours,
                open.as_deref(),
            )?;
            evidence.extend(file);
            match measured {
                BenchmarkRun::Measured(configs) => *into = configs,
                BenchmarkRun::Crash(why) => {
                    return Ok(Paired::Crashed(match side {
                        "baseline" => {
                            format!("the baseline's run (round {}): {why}", rounds.len() + 1)
                        }
                        _ => why,
                    }));
                }
                BenchmarkRun::Interrupted => return Ok(Paired::Interrupted),
            }
        }
        rounds.push(round);
        sides.measured = true;
        durations.push(started.elapsed());
        if rounds.len() == 1 && sides.no_reroll.is_some_and(|alike| alike(evidence)) {
            // the same work measured again could only draw another sample: decided on what there is
            return Ok(
                match verdict::decide_anyway(&rounds, limits, floor, "compiled alike") {
                    Ok(decided) => Paired::Decided(decided),
                    Err(e) => Paired::Crashed(e.to_string()),
                },
            );
        }
        let ambiguous = match verdict::decide(&rounds, limits, floor) {
            Ok(Verdict::Decided(decided)) => return Ok(Paired::Decided(decided)),
            Ok(Verdict::NeedMoreRounds {
                ambiguous,
                open: cases,
                ..
            }) => {
                open = Some(cases);
                ambiguous
            }
            Err(e) => return Ok(Paired::Crashed(e.to_string())),
        };
        let left = sides.deadline.saturating_duration_since(Instant::now());
        if !verdict::another_round_fits(&durations, left) {
            let longest = durations.iter().max().copied().unwrap_or_default();
            let why = format!(
                "a round takes {:.0} s and {:.0} s of the budget are left",
                longest.as_secs_f64(),
                left.as_secs_f64()
            );
            return Ok(match verdict::decide_anyway(&rounds, limits, floor, &why) {
                Ok(decided) => Paired::Decided(decided),
                Err(e) => Paired::Crashed(e.to_string()),
            });
        }
        sides.candidate.runner.progress.line(&format!(
            "round {}: not decided yet ({ambiguous}); measuring another round",
            rounds.len()
        ));
    }
}
