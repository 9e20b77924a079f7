//! What a step does around its attempt once the rounds are over: where the rest runs, the diagnosis,
//! the commit with its evidence note, the compile facts, and the workers after the record.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::Placed;
use super::preflight::{Preflight, tests_ready};
use super::record::{Recorded, record};
use crate::features::diagnose::case::Place;
use crate::features::diagnose::facts::{self, Already, Dumped};
use crate::features::diagnose::profile::{self, Profiled};
use crate::features::snapshot::Tested;
use crate::measure::attempt::{Tried, attempt};
use crate::measure::paired::{self, Holders};
use crate::record::census;
use crate::record::evidence::Evidence;
use crate::record::history::{History, sandbox};
use crate::record::journal::Journal;
use crate::record::session::Iteration;
use crate::rules::compile::CompileFacts;
use crate::rules::decision::{Attempt, Decision};
use crate::system::git::Repo;
use crate::system::gpu::GpuState;
use crate::system::process::Interrupted;
use crate::system::runner::{OnGpu, Placement, Runner};
use crate::system::ui::Progress;

/// Where the work after the rounds runs (the diagnosis, the compile facts, the worker kept for the
/// next step), and by when.
pub struct After<'a> {
    /// The step's runner, on the first GPU the rounds measured on.
    pub place: Box<dyn Runner>,
    /// The GPU as the step began.
    pub gpu: Option<GpuState>,
    /// The Slurm node and job the step ran on, for the iteration; none locally.
    pub placement: Option<Placement>,
    pub progress: &'a Progress,
    pub deadline: Instant,
}

/// The attempt at the snapshot `tested`, on the runner and GPUs of `on`, and where the work after it
/// runs.
pub fn tried<'r, 'a>(
    repo: &'r Repo,
    history: &History,
    on: Placed<'a>,
    tested: &Tested,
    deadline: Instant,
) -> Result<(Tried<'r>, After<'a>)> {
    let Placed {
        place,
        gpu,
        gpus,
        progress,
    } = on;
    // the session's Python is checked beside the attempt's start-ups, after the change is taken (what
    // the check runs is held to it too): its refusal comes before anything the attempt found
    let (tried, ready) = std::thread::scope(|scope| {
        let at = (repo.root.as_path(), sandbox(repo));
        let ready = scope.spawn(|| tests_ready(at, &history.session, &*place, progress));
        let tried = attempt(
            repo,
            history,
            &*place,
            &tested.tree,
            progress,
            deadline,
            &gpus,
        );
        (
            tried,
            ready.join().expect("the check of the tests panicked"),
        )
    });
    let tried = match ready {
        Ok(()) => tried?,
        // Ctrl-C stopped the check as it stopped the attempt, which says what it left
        Err(stopped) if stopped.is::<Interrupted>() => {
            tried?;
            return Err(stopped);
        }
        Err(refused) => return Err(refused),
    };
    let placement = place.placement().cloned();
    // what runs after the rounds (the diagnosis, the compile facts) runs on the first GPU they measured on
    let place = match tried.gpus.first() {
        Some(gpu) => Box::new(OnGpu {
            place,
            gpu: gpu.clone(),
        }) as Box<dyn Runner>,
        None => place,
    };
    let after = After {
        place,
        gpu,
        placement,
        progress,
        deadline,
    };
    Ok((tried, after))
}

/// The share of `budget` (percent) used by now, `deadline` being its end.
pub fn budget_used_pct(deadline: Instant, budget: Duration) -> f64 {
    let left = deadline.saturating_duration_since(Instant::now());
    100.0 * (1.0 - left.as_secs_f64() / budget.as_secs_f64())
}

/// What the diagnosis found (nothing where ncu is missing), and the seconds it took.
pub struct Diagnosed {
    pub found: Option<Profiled>,
    pub seconds: f64,
}

impl After<'_> {
    /// Where the tools run: the runner, the GPU, where their progress goes.
    fn at(&self) -> Place<'_> {
        Place {
            runner: &*self.place,
            gpu: self.gpu.as_ref(),
            progress: self.progress,
        }
    }

    /// The diagnosis of the attempt's code, timed.
    pub fn diagnose(&self, repo: &Repo, history: &History) -> Result<Diagnosed> {
        let started = Instant::now();
        let found = profile::cause_for(repo, &self.at(), history, self.deadline)?;
        Ok(Diagnosed {
            found,
            seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// After the verdict, which they cannot change, and after the note is safe: the compile facts of
    /// `code`, from what the step `found`, the candidate's `dumps` and the runs of its `evidence`; none
    /// without a GPU, cuda-tile or the budget for them, for a crash (its case may hang), or for code
    /// that launched none of the session's kernels (nothing of them was compiled).
    pub fn compile_facts(
        &self,
        repo: &Repo,
        history: &History,
        code: &str,
        attempt: &Attempt,
        (found, dumps, evidence): (Option<&Profiled>, &Path, &Evidence),
    ) -> Option<CompileFacts> {
        // a candidate alike to its baseline has the baseline's facts; its note is read only then
        let note = census::unchanged(&evidence.runs)
            .then(|| Evidence::of(repo, history.current_baseline_commit()).ok())
            .flatten()
            .flatten();
        let alike = facts_of_alike_baseline(evidence, note);
        let already = already(found, alike.as_ref(), dumps, evidence);
        match attempt {
            Attempt::Crashed { .. } => None,
            Attempt::Measured { paired, .. }
                if crate::record::census::ran_no_allowed_kernel(&paired.reason) =>
            {
                None
            }
            _ => facts::for_iteration(
                repo,
                self.at(),
                &history.session,
                &history.current_baseline().configs,
                code,
                already,
                self.deadline,
            ),
        }
    }
}

/// What the step already has that may give the compile facts without a run of their own: its
/// diagnosis, the current baseline's facts for alike code (`alike_baseline`), and the candidate's runs
/// in `evidence` with the folder they dumped into.
fn already<'a>(
    found: Option<&'a Profiled>,
    alike_baseline: Option<&'a CompileFacts>,
    dumps: &'a Path,
    evidence: &'a Evidence,
) -> Already<'a> {
    Already {
        diagnosed: found,
        alike_baseline,
        dumped: Some(Dumped {
            dir: dumps,
            runs: (evidence.runs.iter())
                .filter(|run| run.name.ends_with("-candidate"))
                .collect(),
        }),
    }
}

/// The current baseline's compile facts, from its note (`baseline`), where the step's candidate compiled to
/// the same Tile IR and launched the same kernels as the baseline (no change) on the GPU the note names:
/// gathering them again (an assembler run per kernel, 0.8-1.6 s on an H100) would find the same.
pub fn facts_of_alike_baseline(
    evidence: &Evidence,
    baseline: Option<Evidence>,
) -> Option<CompileFacts> {
    let baseline = baseline?;
    let alike = baseline.gpu.is_some() && baseline.gpu == evidence.gpu;
    (alike && census::unchanged(&evidence.runs))
        .then_some(baseline.compile)
        .flatten()
}

/// Commits the iteration with its evidence note: the note is kept before the commit (a kill between
/// the commit and its note leaves it to `repair`), and an iteration without its note would stand
/// unchecked, so a failure to attach it undoes the commit.
pub fn commit_with_note(
    repo: &Repo,
    journal: &mut Journal,
    ready: &Preflight,
    iteration: Iteration,
    notes: Option<&str>,
    evidence: &Evidence,
) -> Result<Recorded> {
    journal.note = Some(evidence.stash(repo)?);
    let commit = record(
        repo,
        journal,
        &ready.history,
        iteration,
        &ready.changed,
        notes,
    )?;
    evidence.attach(repo, &commit.id)?;
    Ok(commit)
}

/// Adds the compile facts to the iteration's note; a failure is a warning, since the note it had stands.
pub fn attach(repo: &Repo, evidence: &Evidence, commit: &str, progress: &Progress) {
    if let Err(e) = evidence.attach(repo, commit) {
        progress.line(&format!(
            "warning: the iteration's evidence note stands without its compile facts: {e:#}"
        ));
    }
}

/// The workers once the iteration is recorded: the one holding the new baseline's code ends with a
/// loop that halts (`decision`), or is kept for the next step; old worker logs and dumps are pruned.
pub fn settle_workers(
    repo: &Repo,
    holder: Holders,
    decision: Decision,
    history: &History,
    progress: &Progress,
    deadline: Instant,
) {
    let baseline_tree = holder.tree().map(str::to_string);
    if decision.halts() {
        holder.end_with_the_loop(decision, progress);
    } else {
        holder.keep_as_baseline(repo, history.current_baseline_commit(), deadline, progress);
    }
    paired::prune_worker_logs(repo);
    if let Some(tree) = baseline_tree {
        paired::prune_dumps(repo, &tree);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::compile::{CompiledKernel, tile_ops};

    const GPU: &str = "NVIDIA H100 80GB HBM3, 9.0, 580.159.04";

    /// A step's evidence on `gpu` whose two sides' first rounds launched `scale` and compiled the Tile
    /// IR `candidate` and `baseline` name.
    fn evidence(gpu: Option<&str>, [candidate, baseline]: [&str; 2]) -> Evidence {
        let history = crate::record::history::tests::history(Vec::new());
        let signature = "scale_Kt1_A1f16_1l0_I128";
        let runs = [("candidate", candidate), ("baseline", baseline)].map(|(side, body)| {
            let mut run = census::first_round(side, "scale", signature);
            let ir = format!("entry @{signature}(%arg0: tile<ptr<f16>>) {{\n  {body}\n}}\n");
            run.compiled = Some(vec![CompiledKernel::of(&ir, "")]);
            run
        });
        Evidence {
            gpu: gpu.map(str::to_string),
            ..Evidence::new(&history.session, 1, None, runs.into())
        }
    }

    #[test]
    fn a_candidate_alike_to_its_baseline_on_the_same_gpu_has_the_baselines_compile_facts() {
        let mut note = evidence(Some(GPU), ["return", "return"]);
        let facts = CompileFacts {
            tile_ir: [("scale".to_string(), tile_ops("  return\n"))].into(),
            ..CompileFacts::default()
        };
        note.compile = Some(facts.clone());
        let alike = evidence(Some(GPU), ["return", "return"]);
        assert_eq!(
            facts_of_alike_baseline(&alike, Some(note.clone())),
            Some(facts)
        );
        // other Tile IR, another GPU, no GPU named, or a note without facts: gathered as for any step
        let changed = evidence(Some(GPU), ["%0 = constant 1\n  return", "return"]);
        assert_eq!(facts_of_alike_baseline(&changed, Some(note.clone())), None);
        let elsewhere = evidence(Some("NVIDIA H200, 9.0, 580.159.04"), ["return", "return"]);
        assert_eq!(
            facts_of_alike_baseline(&elsewhere, Some(note.clone())),
            None
        );
        let unnamed = evidence(None, ["return", "return"]);
        assert_eq!(
            facts_of_alike_baseline(
                &unnamed,
                Some(Evidence {
                    gpu: None,
                    ..note.clone()
                })
            ),
            None
        );
        note.compile = None;
        assert_eq!(facts_of_alike_baseline(&alike, Some(note)), None);
        assert_eq!(facts_of_alike_baseline(&alike, None), None);
    }
}
