//! The checks before any run: a halted loop, an empty change, paths outside the allowed set, a history
//! that broke the rule or holds commits the tool did not make. Nothing runs and nothing changes here.

use anyhow::{Context, Result};

use crate::audit;
use crate::benchmark_run;
use crate::decision::LoopState;
use crate::git::Repo;
use crate::gpu::{self, GpuState};
use crate::guard;
use crate::hint::hinted;
use crate::history::{Configs, History, require_history};
use crate::pytest::Pytest;
use crate::runner::Runner;
use crate::session::{Session, short};
use crate::ui::Progress;
use crate::workers::lasting;

/// What the checks before any run found: the session read once, and the paths the change touches.
pub struct Preflight {
    pub history: History,
    pub changed: Vec<String>,
}

/// Refuses, before anything runs, a halted loop, an empty change, a change outside the allowed paths
/// and a history that broke the rule.
pub fn preflight(repo: &Repo, continue_anyway: bool) -> Result<Preflight> {
    // every iteration's configs: the report's `next_action` finds the variants in them
    let history = require_history(repo, Configs::All)?;
    refuse_halted(&history, continue_anyway)?;
    let allowed = &history.session.allowed;
    crate::refusals::check_step(repo, allowed)?;
    crate::refusals::check_perf_file(repo, &history.session)?;
    if let Some(branch) = repo.branch()? {
        crate::ignored::check(repo, &branch)?;
    }
    let changed = repo.all_changes()?;
    if changed.is_empty() {
        return Err(hinted(
            "nothing to try: the work tree has no changes",
            format!("apply one optimization to {} first", allowed.join(" or ")),
        ));
    }
    let outside = guard::disallowed(&changed, allowed);
    if !outside.is_empty() {
        return Err(hinted(
            format!(
                "only the session's allowed paths may change, but these did:\n  {}\nallowed: {}",
                outside.join("\n  "),
                allowed.join(", ")
            ),
            "undo them (`git restore <path>`, or move new files away; a file your tests write belongs in \
             .git/info/exclude) and run step again",
        ));
    }
    refuse_broken_history(repo, &history)?;
    Ok(Preflight { history, changed })
}

fn refuse_halted(history: &History, continue_anyway: bool) -> Result<()> {
    if let (state, Some(halted)) = history.loop_state()
        && !continue_anyway
    {
        return Err(hinted(
            format!(
                "the loop has {} at iteration {}: {}",
                match state {
                    LoopState::Escalated => "escalated to you",
                    _ => "stopped",
                },
                halted.number,
                halted.reason
            ),
            "pass --continue to try another optimization anyway",
        ));
    }
    Ok(())
}

/// Commits since the baseline may only touch the allowed paths, and only the tool may have made them.
fn refuse_broken_history(repo: &Repo, history: &History) -> Result<()> {
    let since_baseline = repo.changed_between(&history.baseline_commit, "HEAD")?;
    let broken = guard::disallowed(&since_baseline, &history.session.allowed);
    if !broken.is_empty() {
        return Err(hinted(
            format!(
                "the session history broke the rule: commits since the baseline {} changed paths outside the \
                 allowed set:\n  {}",
                short(&history.baseline_commit),
                broken.join("\n  ")
            ),
            "nothing is recorded on a broken history; revert those commits first",
        ));
    }
    let mut record = audit::identity_findings(repo, history)?;
    record.extend(audit::unnoted_iterations(repo, history)?);
    if !record.is_empty() {
        return Err(hinted(
            format!(
                "the session's record does not hold:\n  {}",
                one_a_line(&record)
            ),
            "nothing is recorded until it does; a missing baseline ref is fetched with the notes (`git fetch \
             origin 'refs/cutile-perf/*:refs/cutile-perf/*'`), a replacement removed with `git replace -d`, an \
             iteration the tool did not record reset away (`git reset --hard <its parent>`); `git cutile-perf \
             verify` lists every finding",
        ));
    }
    let foreign = audit::foreign_findings(repo, history)?;
    if !foreign.is_empty() {
        let latest = history
            .iterations
            .last()
            .map_or(&history.baseline_commit, |(c, _)| c);
        return Err(hinted(
            format!(
                "the session history holds commits the tool did not make:\n  {}",
                one_a_line(&foreign)
            ),
            format!(
                "nothing is recorded over them; revert them (`git revert <commit>`), or, for your own latest \
                 commits, `git reset --soft {}` and let `step` record the change",
                short(latest)
            ),
        ));
    }
    Ok(())
}

/// Findings, one a line, indented under the sentence that names them.
fn one_a_line(findings: &[impl ToString]) -> String {
    findings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// The session's Python can run pytest where the step runs, as `start` checked: an interpreter or
/// pytest gone since is refused before anything runs, never recorded as the kernel's crash.
pub fn tests_ready(
    repo: &Repo,
    session: &Session,
    place: &dyn Runner,
    progress: &Progress,
) -> Result<()> {
    Pytest {
        python: &session.python,
        root: &repo.root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox: super::super::sandbox(repo),
        deadline: std::time::Instant::now(),
        place,
        dumps: None,
        gpu: None,
        progress,
    }
    .check_available()
    .context("the tests cannot start, so nothing was run or recorded")
}

/// The GPU this step runs on. Refused when the session had one and it is gone or cannot run cuTile;
/// a warning when it is another model than the baseline's, or other processes use it. `None` for a
/// session without a GPU.
pub fn gpu_ready(
    repo: &Repo,
    session: &Session,
    place: &dyn Runner,
    progress: &Progress,
) -> Result<Option<GpuState>> {
    let Some(recorded) = session.gpu.as_deref().filter(|_| !session.no_gpu) else {
        return Ok(None);
    };
    // the workers kept between steps are ours, not another process on the GPU
    let kept: Vec<u32> = lasting::all(repo)?
        .iter()
        .map(|(_, worker)| worker.process.pid)
        .collect();
    let state = place
        .gpu(&repo.root)
        .map(|state| benchmark_run::without(state, &kept));
    let warnings = gpu::check(state.as_ref()).map_err(|why| {
        hinted(
            why,
            format!(
                "the session's baseline ran on {recorded}; run step where that GPU is (nothing was run or \
                 recorded)"
            ),
        )
    })?;
    for warning in warnings {
        progress.line(&format!("warning: {warning}"));
    }
    for line in lasting::others_on_gpu(state.as_ref(), place) {
        progress.line(&line);
    }
    if let Some(now) = &state
        && gpu::model_of(&now.gpu.identity()) != gpu::model_of(recorded)
    {
        progress.line(&format!(
            "warning: this step runs on {}, the baseline ran on {recorded}: the paired rounds compare \
             on this GPU, but its latencies are not comparable with earlier rows",
            now.gpu.identity()
        ));
    }
    Ok(state)
}

/// The GPUs this step measures on, one (baseline, candidate) pair each (`gpu::pool`): `--gpus`
/// (`asked`), else `CUDA_VISIBLE_DEVICES`, else every GPU nvidia-smi lists, all of the session's model.
/// Empty: the environment's GPU, as without a pool (a session without a GPU, or a Slurm job, whose GPUs
/// its sbatch options give).
pub fn gpu_pool(
    repo: &Repo,
    session: &Session,
    place: &dyn Runner,
    asked: Option<&str>,
) -> Result<Vec<String>> {
    if place.placement().is_some() {
        return match asked {
            Some(_) => Err(hinted(
                "--gpus is not supported with the Slurm runner",
                "the job's GPUs come from its sbatch options (--gres=gpu:N in cutile-perf.slurm-args); \
                 run step without --gpus",
            )),
            None => Ok(Vec::new()),
        };
    }
    let Some(recorded) = session.gpu.as_deref().filter(|_| !session.no_gpu) else {
        return match asked {
            Some(_) => Err(hinted(
                "--gpus: this session measures without a GPU",
                "run step without --gpus, or start a session on a GPU machine",
            )),
            None => Ok(Vec::new()),
        };
    };
    let found = gpu::list(|args| place.command("nvidia-smi", args, &repo.root));
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let pool = gpu::pool(asked, visible.as_deref(), &found, gpu::model_of(recorded))?;
    // the machine's one GPU, named by nobody, is the environment's: measured as without a pool, so that
    // the worker `start` kept (pinned to no GPU) serves the step
    Ok(match (asked, &visible, found.len()) {
        (None, None, 1) => Vec::new(),
        _ => pool,
    })
}
