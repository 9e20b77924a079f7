//! `start`'s plan: everything decided before anything is created (the kernel, its test and allowed
//! paths, the GPU, the class, the runner), and the command-line paths it is given.

use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::StartOptions;
use crate::features::inspect::report::Plan as InspectPlan;
use crate::features::inspect::{ClassEstimate, Report};
use crate::features::locate::{self, Kernel};
use crate::features::refusals;
use crate::record::history::sandbox;
use crate::record::session::harness::HarnessMode;
use crate::record::session::{BRANCH_PREFIX, Session};
use crate::rules::decision::Thresholds;
use crate::rules::hint::hinted;
use crate::rules::kernel_class::{self, KernelClass};
use crate::system::git::Repo;
use crate::system::gpu::{self, GpuState};
use crate::system::pytest::{Pytest, default_python};
use crate::system::runner::{self, Local, OnGpu, Runner};
use crate::system::ui::Progress;
use crate::system::workers::lasting;

/// The paths the inspection found, with `--allow` added and `--deny` removed; never none.
fn allowed_paths(
    repo: &Repo,
    mut allowed: Vec<String>,
    allow: &[String],
    deny: &[String],
) -> Result<Vec<String>> {
    for path in allow {
        let path = repo_relative(repo, path)?;
        refusals::check_allowed(repo, &path)?;
        if !allowed.contains(&path) {
            allowed.push(path);
        }
    }
    for path in deny {
        let path = repo_relative(repo, path)?;
        allowed.retain(|p| *p != path);
    }
    if allowed.is_empty() {
        return Err(hinted(
            "--deny removed every allowed path",
            "a session must be allowed to change at least the kernel file",
        ));
    }
    Ok(allowed)
}

/// Everything decided before anything is created: the session, its branch, and the runner.
pub struct Plan {
    pub session: Session,
    pub branch: String,
    pub kernel_name: String,
    /// Where the baseline runs: here, or on a Slurm node held until the baseline is measured.
    pub place: Box<dyn Runner>,
    pub deadline: Instant,
    /// Whether to measure the class with ncu after the baseline: no `--class` or `--intensity`, and a GPU.
    pub measure_class: bool,
    /// What `inspect` read from the source: the plan shown before the baseline.
    pub inspection: Option<Report>,
    pub gpu_state: Option<GpuState>,
    /// Where the baseline's progress goes: the verb's.
    pub progress: Progress,
}

/// Decides everything `start` needs before it creates anything: what the session covers, its branch,
/// where the baseline runs, the class and the session itself; refuses what cannot start.
pub fn plan(repo: &Repo, args: &StartOptions, progress: &Progress) -> Result<Plan> {
    refusals::refuse_session_branch(repo)?;
    let scope = scope(repo, args, progress)?;
    let branch = new_branch(repo, &scope.found)?;
    // the queue wait comes before the budget starts
    let placed = open_place(repo, args, progress)?;
    let estimate = scope
        .inspection
        .report
        .as_ref()
        .and_then(|r| r.class.as_ref());
    let class = choose_class(args, estimate, placed.gpu_state.is_some());
    refuse_contradiction(&args.thresholds)?;
    let session = session(repo, args, &scope, &placed, &class);
    let plan = Plan {
        session,
        branch,
        kernel_name: scope.found.name,
        place: placed.place,
        deadline: Instant::now() + args.budget,
        inspection: scope.inspection.report,
        measure_class: class.measure,
        gpu_state: placed.gpu_state,
        progress: progress.clone(),
    };
    plan.runner(repo).check_available()?;
    Ok(plan)
}

/// The session branch's name, the kernel's and today's; refused when a branch of that name exists.
fn new_branch(repo: &Repo, found: &Kernel) -> Result<String> {
    let branch = format!("{BRANCH_PREFIX}{}-{}", found.name, today());
    if repo.branch_exists(&branch)? {
        return Err(hinted(
            format!("branch {branch} already exists"),
            format!(
                "continue it with `git checkout {branch}`, or rename it (`git branch -m {branch} \
                 {branch}-old`) to start afresh"
            ),
        ));
    }
    Ok(branch)
}

/// Where the baseline runs and the GPU found there (none with `--no-gpu`).
struct Placed {
    place: Box<dyn Runner>,
    gpu_state: Option<GpuState>,
}

/// Opens the runner, narrows it to `--gpus`, and, unless `--no-gpu`, refuses a place without a GPU
/// that runs cuTile and says who else uses the GPU.
fn open_place(repo: &Repo, args: &StartOptions, progress: &Progress) -> Result<Placed> {
    let place = runner::open(&args.runner, &repo.root, &sandbox(repo), progress)?;
    let gpu_state = match args.no_gpu {
        true => None,
        false => place.gpu(&repo.root),
    };
    let placed = Placed { place, gpu_state };
    let placed = match &args.gpus {
        Some(asked) => on_chosen_gpu(repo, placed, asked)?,
        None => placed,
    };
    if !args.no_gpu {
        require_gpu(placed.gpu_state.as_ref(), progress)?;
        for line in lasting::others_on_gpu(placed.gpu_state.as_ref(), &*placed.place) {
            progress.line(&line);
        }
    }
    Ok(placed)
}

/// The place narrowed to the first GPU `--gpus` names, its state that GPU's.
fn on_chosen_gpu(repo: &Repo, placed: Placed, asked: &str) -> Result<Placed> {
    let (gpu, device) = chosen_gpu(repo, &*placed.place, asked)?;
    Ok(Placed {
        gpu_state: placed.gpu_state.map(|state| GpuState { gpu, ..state }),
        place: Box::new(OnGpu {
            place: placed.place,
            gpu: device,
        }),
    })
}

/// The session's class, where it came from, and whether ncu measures it after the baseline.
struct ClassChoice {
    class: Option<KernelClass>,
    source: Option<String>,
    measure: bool,
}

/// An option names the class; otherwise the inspection estimates it, and ncu may measure it after the
/// baseline where there is a GPU.
fn choose_class(
    args: &StartOptions,
    estimate: Option<&ClassEstimate>,
    has_gpu: bool,
) -> ClassChoice {
    let (class, source) = class_of(args.class, args.intensity, estimate);
    ClassChoice {
        class,
        source,
        measure: args.class.is_none() && args.intensity.is_none() && has_gpu,
    }
}

/// Refuses thresholds that contradict each other.
fn refuse_contradiction(thresholds: &Thresholds) -> Result<()> {
    match thresholds.contradiction() {
        Some(why) => Err(hinted(
            why,
            "nothing was made; pass a --continue-pct at least the --gain-pct",
        )),
        None => Ok(()),
    }
}

/// The session as its trailers record it: the options, what it covers, and the place's GPU and Python.
fn session(
    repo: &Repo,
    args: &StartOptions,
    scope: &Scope,
    placed: &Placed,
    class: &ClassChoice,
) -> Session {
    let gpu_state = placed.gpu_state.as_ref();
    Session {
        kernel: scope.found.path.clone(),
        perf_file: scope.perf_file.clone(),
        benchmark: scope.benchmark.clone(),
        test: scope.test.clone(),
        allowed: scope.allowed.clone(),
        statistic: args.stat,
        thresholds: args.thresholds,
        python: args
            .python
            .clone()
            .unwrap_or_else(|| default_python(&*placed.place, &repo.root)),
        filter: args.filter.clone(),
        class: class.class,
        class_source: class.source.clone(),
        gpu: gpu_state.map(|s| s.gpu.identity()),
        gpu_state: gpu_state.map(describe_state),
        no_gpu: args.no_gpu,
        noted: true,
        runner: args.runner.clone(),
        spread: Vec::new(),
        harness: Some(HarnessMode::now()),
        // what `start` finds is recorded as it records the list beside the session
        ignored: None,
    }
}

/// `--gpus`: the first GPU it names (the session's, as nvidia-smi lists it, and its index), the others
/// checked to be of its model; on the local runner only.
fn chosen_gpu(repo: &Repo, place: &dyn Runner, asked: &str) -> Result<(gpu::Gpu, String)> {
    if place.placement().is_some() {
        return Err(hinted(
            "--gpus is not supported with the Slurm runner",
            "the job's GPUs come from its sbatch options (--gres=gpu:N in --slurm-args); start without \
             --gpus",
        ));
    }
    let found = gpu::list(|args| place.command("nvidia-smi", args, &repo.root));
    let (gpus, first) = gpu::session_gpus(asked, &found)?;
    Ok((first.clone(), gpus[0].clone()))
}

/// What the session covers: the kernel, what `inspect` read, the test and the allowed paths.
struct Scope {
    found: Kernel,
    inspection: InspectPlan,
    test: String,
    /// The session perf file's hash, when the test is one.
    perf_file: Option<String>,
    /// The standalone benchmark script the session perf file runs, when it runs one.
    benchmark: Option<String>,
    allowed: Vec<String>,
}

/// Refuses a dirty work tree, finds the kernel and inspects it; the test and allowed paths come from
/// the inspection unless the options say otherwise.
fn scope(repo: &Repo, args: &StartOptions, progress: &Progress) -> Result<Scope> {
    locate::check_tilegym(&repo.root)?;
    let dirty = repo.tracked_changes()?;
    if !dirty.is_empty() {
        return Err(hinted(
            format!(
                "the work tree has uncommitted changes to tracked files:\n  {}",
                dirty.join("\n  ")
            ),
            "commit or stash them first, on the branch you start from, never on a cutile-perf session branch; a \
             session must start from a clean HEAD",
        ));
    }
    let found = locate::kernel(&repo.root, &args.kernel, args.suite.as_deref())?;
    // this machine's GPU picks the autotune branches the plan shows (on Slurm, the node's is checked later)
    let local_gpu = match args.no_gpu {
        true => None,
        false => Local.gpu(&repo.root),
    };
    let inspection =
        crate::features::inspect::report::plan(&repo.root, &found, local_gpu.as_ref(), progress);
    let test = match &args.test {
        Some(path) => repo_relative(repo, path)?,
        None => default_test(repo, &found, &inspection, progress)?,
    };
    let allowed = allowed_paths(
        repo,
        inspection.allowed_paths(&found),
        &args.allow,
        &args.deny,
    )?;
    // the session perf file is never committed: git ignores the sandbox, and the session records it as
    // an ignored file the tests load
    let untracked_ok = test == crate::features::inspect::source::session_perf_file(&found);
    refusals::check_start(repo, &test, untracked_ok)?;
    let source = crate::features::inspect::source::find(&repo.root, &found, Some(&test));
    crate::features::inspect::source::require_perf_cases(&found, &test, &source)?;
    refusals::check_step(repo, &allowed, &test)?;
    let perf_file = match untracked_ok {
        true => Some(refusals::perf_file_hash(repo, &test)?),
        false => None,
    };
    let benchmark = match untracked_ok {
        true => benchmark_run_by(repo, &test),
        false => None,
    };
    if let Some(script) = &benchmark {
        refusals::require_committed_benchmark(repo, script, &found.name)?;
        for line in benchmark_source_lines(&test, script) {
            progress.line(&line);
        }
    }
    Ok(Scope {
        found,
        inspection,
        test,
        perf_file,
        benchmark,
        allowed,
    })
}

/// The session's test when no `--test` names one: the inspection's, unless the kernel's only source is
/// a standalone benchmark script; then the session perf file that runs the script's cuTile lines,
/// written now unless one is there already.
fn default_test(
    repo: &Repo,
    found: &Kernel,
    inspection: &InspectPlan,
    progress: &Progress,
) -> Result<String> {
    use crate::features::inspect::{perf_file, source};
    let test = inspection.test.as_ref().ok().map(|t| t.path.as_str());
    match source::find(&repo.root, found, test) {
        source::Source::Benchmark { path } => {
            let file = source::session_perf_file(found);
            let text = perf_file::render_benchmark(&found.name, &path, test);
            perf_file::write(repo, &file, &text)?;
            progress.line(&format!("wrote {file}"));
            Ok(file)
        }
        source::Source::SessionPerfFile { path, .. } if benchmark_run_by(repo, &path).is_some() => {
            Ok(path)
        }
        _ => Ok(inspection.test.clone()?.path),
    }
}

/// The standalone benchmark script the session perf file `path` runs, if it runs one.
fn benchmark_run_by(repo: &Repo, path: &str) -> Option<String> {
    std::fs::read_to_string(repo.root.join(path))
        .ok()
        .and_then(|text| {
            crate::features::inspect::perf_file::benchmark_of(&text).map(str::to_string)
        })
}

/// What `start` says of a session timed through a standalone benchmark script: what runs, and how far
/// the checks of a kept step reach it.
fn benchmark_source_lines(file: &str, benchmark: &str) -> Vec<String> {
    vec![
        format!(
            "source: the cuTile lines of the standalone benchmark {benchmark}, run through {file}; every \
             other backend is skipped"
        ),
        "  each (x-value, line) is a config: its latency is what the script's timing call measured, its \
         assert_close the config's correctness test"
            .to_string(),
        format!("  {}", crate::record::session::BENCHMARK_REACH),
    ]
}

/// Refuses a machine without a GPU that runs cuTile (nothing is created yet); prints the warnings.
fn require_gpu(state: Option<&GpuState>, progress: &Progress) -> Result<()> {
    match gpu::check(state) {
        Ok(warnings) => {
            for warning in warnings {
                progress.line(&format!("warning: {warning}"));
            }
            Ok(())
        }
        Err(why) => Err(hinted(
            why.to_string(),
            "run start where the kernel's GPU is (or with --runner slurm); --no-gpu starts without one, \
             for tests that run on the CPU (it is recorded in the session); nothing was created",
        )),
    }
}

/// The GPU's state in the session's words: clocks, memory and who else uses it.
fn describe_state(state: &GpuState) -> String {
    let others = match state.processes.as_slice() {
        [] => "no other processes".to_string(),
        processes => format!("other processes: {}", gpu::describe_processes(processes)),
    };
    match state.gpu.state_line() {
        line if line.is_empty() => others,
        line => format!("{line}; {others}"),
    }
}

/// The session's class and where it came from: `--class`, else `--intensity`, else the inspection's
/// estimate.
fn class_of(
    class: Option<KernelClass>,
    intensity: Option<f64>,
    estimate: Option<&ClassEstimate>,
) -> (Option<KernelClass>, Option<String>) {
    match (class, intensity, estimate) {
        (Some(class), _, _) => (Some(class), Some("--class".to_string())),
        (None, Some(i), _) => (
            Some(kernel_class::classify(i)),
            Some(format!("--intensity {i}")),
        ),
        (None, None, Some(e)) => (Some(e.class), Some(format!("{}: {}", e.source, e.reason))),
        (None, None, None) => (None, None),
    }
}

impl Plan {
    /// The tests of the session, run within the baseline's budget.
    pub fn runner<'a>(&'a self, repo: &'a Repo) -> Pytest<'a> {
        Pytest {
            python: &self.session.python,
            root: &repo.root,
            test: &self.session.test,
            filter: self.session.filter.as_deref(),
            sandbox: sandbox(repo),
            deadline: self.deadline,
            place: &*self.place,
            dumps: None,
            gpu: None,
            progress: &self.progress,
        }
    }
}

/// A path given on the command line, relative to the current directory, as a repository path.
fn repo_relative(repo: &Repo, path: &str) -> Result<String> {
    let absolute = std::path::absolute(path).with_context(|| format!("bad path {path}"))?;
    // resolve symlinked directories (as the root is resolved) but not the file itself
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        bail!("{path} is not a file path");
    };
    let parent = parent
        .canonicalize()
        .with_context(|| format!("{path} does not exist"))?;
    let relative = parent.join(name);
    let relative = relative
        .strip_prefix(&repo.root)
        .with_context(|| format!("{path} is outside the repository {}", repo.root.display()))?;
    if std::fs::symlink_metadata(repo.root.join(relative)).is_err() {
        bail!("{path} does not exist");
    }
    let text = relative
        .to_str()
        .with_context(|| format!("{path} is not valid UTF-8"))?;
    Ok(text.replace(std::path::MAIN_SEPARATOR, "/"))
}

/// The local date (the zone in `TZ`, else the system's) as YYYYMMDD.
fn today() -> String {
    date_stamp(jiff::Timestamp::now(), &jiff::tz::TimeZone::system())
}

/// `now`'s date in `zone` as YYYYMMDD.
fn date_stamp(now: jiff::Timestamp, zone: &jiff::tz::TimeZone) -> String {
    now.to_zoned(zone.clone()).strftime("%Y%m%d").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::tz::TimeZone;

    #[test]
    fn the_branch_date_is_the_local_date() {
        let zone = |tz: &str| TimeZone::posix(tz).unwrap();
        let late = |at: &str| at.parse::<jiff::Timestamp>().unwrap();
        // 03:30 UTC is still the evening before in New York, with or without daylight saving time
        let new_york = zone("EST5EDT,M3.2.0,M11.1.0");
        assert_eq!(
            date_stamp(late("2026-12-02T03:30:00Z"), &new_york),
            "20261201"
        );
        assert_eq!(
            date_stamp(late("2026-07-01T03:30:00Z"), &new_york),
            "20260630"
        );
        assert_eq!(
            date_stamp(late("2026-12-02T05:00:00Z"), &new_york),
            "20261202"
        );
        assert_eq!(
            date_stamp(late("2026-12-02T03:30:00Z"), &TimeZone::UTC),
            "20261202"
        );
        assert_eq!(
            date_stamp(late("2026-12-31T20:00:00Z"), &zone("JST-9")),
            "20270101"
        );
    }
}
