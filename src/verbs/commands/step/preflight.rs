//! The checks before any run: an edit made in a side's worktree beside the work tree, a halted loop, an
//! empty change, paths outside the allowed set, a history that broke the rule or holds commits the tool
//! did not make. Nothing runs here, and the one thing
//! written is the sandbox's line in this clone's `.git/info/exclude`, so that the tool's own outputs are
//! not counted among the change's paths.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::record::audit;
use crate::record::benchmark_run;
use crate::record::history::{Configs, History, made_sandbox, require_history};
use crate::record::session::harness::HarnessMode;
use crate::record::session::{Session, short};
use crate::rules::decision::LoopState;
use crate::rules::guard;
use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::gpu::{self, GpuState};
use crate::system::process::Interrupted;
use crate::system::pytest::Pytest;
use crate::system::runner::Runner;
use crate::system::ui::Progress;
use crate::system::workers::lasting;

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
    // the work tree (its sandbox) and the objects (the commits and the note) may be on two disks
    crate::system::disk::refuse_full(&repo.root, "a step")?;
    crate::system::disk::refuse_full(&repo.git_path("objects")?, "a step")?;
    made_sandbox(repo)?;
    crate::features::code_tree::refuse_edited_trees(repo)?;
    refuse_halted(&history, continue_anyway)?;
    refuse_other_harness(&history.session, &HarnessMode::now())?;
    let allowed = &history.session.allowed;
    crate::features::refusals::check_step(repo, allowed, &history.session.test)?;
    crate::features::refusals::check_perf_file(repo, &history.session)?;
    if let Some(branch) = repo.branch()? {
        crate::features::ignored::check(repo, &branch, history.session.ignored.as_deref())?;
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

/// Refuses an environment whose harness variables would make the runs measure otherwise than at the
/// session's `start` (a session recorded before them is not held to it).
fn refuse_other_harness(session: &Session, here: &HarnessMode) -> Result<()> {
    let Some(at_start) = &session.harness else {
        return Ok(());
    };
    let departures = at_start.departures(here, "here", "at start");
    if departures.is_empty() {
        return Ok(());
    }
    Err(hinted(
        format!(
            "this environment's harness would measure otherwise than the session's start ({}): its \
             runs would not compare with the baseline's",
            departures.join("; ")
        ),
        format!(
            "set the harness variables as they were at start, {at_start}; or start a new session for \
             this mode"
        ),
    ))
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
            "report the results to the user (`git cutile-perf table`); only on their word step again with \
             --continue, which tries another optimization anyway (your edit is still in the work tree)",
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
            "nothing is recorded on a broken history: run `git cutile-perf repair --json`, which takes back \
             the commits the tool did not make (your edit stays in the work tree), then step again",
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
             origin 'refs/cutile-perf/*:refs/cutile-perf/*'`), missing notes with `git cutile-perf fetch`, a \
             replacement removed with `git replace -d`; past an iteration the tool did not record, start a new \
             session from the last commit whose record holds (`git checkout -b <new branch> <that commit>`, then \
             `git cutile-perf start <kernel>`); `git cutile-perf verify` lists every finding",
        ));
    }
    let foreign = audit::foreign_findings(repo, history)?;
    if !foreign.is_empty() {
        return Err(hinted(
            format!(
                "the session history holds commits the tool did not make:\n  {}",
                one_a_line(&foreign)
            ),
            "nothing is recorded over them: run `git cutile-perf repair --json`, which takes their change back \
             in a commit of its own (they stay in the history; your edit stays in the work tree), then step \
             again",
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
/// pytest gone since is refused before anything is recorded, never recorded as the kernel's crash. It
/// runs beside the attempt's start (`python -m pytest --version` takes 0.3-0.5 s).
pub fn tests_ready(
    (root, sandbox): (&Path, PathBuf),
    session: &Session,
    place: &dyn Runner,
    progress: &Progress,
) -> Result<()> {
    Pytest {
        python: &session.python,
        root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox,
        deadline: std::time::Instant::now(),
        place,
        dumps: None,
        gpu: None,
        progress,
    }
    .check_available()
    .map_err(|e| match e.is::<Interrupted>() {
        true => e,
        false => e.context("the tests cannot start, so nothing was recorded"),
    })
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
