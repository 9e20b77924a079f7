//! `start`: the session branch and iteration 0, the baseline.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;

use super::{Interrupted, sandbox, write_table};
use crate::cli::StartArgs;
use crate::decision::{self, Correctness, Decision, Status, Thresholds};
use crate::evidence::{Evidence, RunFile};
use crate::git::Repo;
use crate::history::History;
use crate::journal::{self, Journal, Lock, Phase, Verb};
use crate::pytest::{BenchmarkRun, CorrectnessRun, Pytest};
use crate::records::Measurement;
use crate::runner::Runner;
use crate::session::{BRANCH_PREFIX, Iteration, Session, fmt_ms};
use crate::stats::{self, Spread, geometric_mean};
use crate::trailers::{Block, render_message};
use crate::{gpu, kernel_class, locate, ui};
use crate::{process, recovery, refusals};

/// What `start` did, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct StartReport {
    pub branch: String,
    pub commit: String,
    pub session: Session,
    pub iteration: u32,
    pub latency_ms: f64,
    pub configs: Vec<Measurement>,
    pub table: PathBuf,
    /// What the correctness run found, in words.
    #[serde(skip)]
    tests: String,
    /// Configs too noisy for the thresholds.
    pub noisy: Vec<Spread>,
}

/// A session as a pipeline: plan (checks, nothing created), baseline (branch, hook, runs), commit, render.
pub fn run(repo: &Repo, args: &StartArgs, out: &mut impl Write) -> Result<StartReport> {
    let _lock = Lock::take(repo, "start")?;
    clean_up_interrupted_start(repo)?;
    process::record_groups_in(journal::group_file(repo)?);
    let plan = plan(repo, args)?;
    let original = match repo.branch()? {
        Some(name) => name,
        None => repo.head()?,
    };
    let mut journal = Journal {
        verb: Verb::Start,
        pid: std::process::id(),
        phase: Phase::CreatingBranch,
        branch: plan.branch.clone(),
        base: repo.head()?,
        original: Some(original.clone()),
        edit_tree: None,
    };
    journal.save(repo)?;
    let result = (|| {
        repo.git(&["checkout", "-q", "-b", &plan.branch])?;
        repo.exclude(&format!("/{}/", crate::guard::SANDBOX))?;
        crate::ignored::record(repo, &plan.branch)?;
        super::hook::report(crate::hook::install(repo)?);
        journal.enter(repo, Phase::RunningTests)?;
        let baseline = baseline(repo, &plan, &original)?;
        commit(repo, &mut journal, plan, baseline)
    })();
    let report = recovery::settle(repo, &journal, result)?;
    render(&report, args.output.json, out)?;
    Ok(report)
}

/// Everything decided before anything is created: the session, its branch, and the runner.
struct Plan {
    session: Session,
    branch: String,
    kernel_name: String,
    /// Where the baseline runs: here, or on a Slurm node held until the baseline is measured.
    place: Runner,
    deadline: Instant,
}

fn plan(repo: &Repo, args: &StartArgs) -> Result<Plan> {
    let StartArgs {
        kernel,
        suite,
        test,
        allow,
        deny,
        python,
        filter,
        stat,
        class,
        intensity,
        runner,
        budget,
        thresholds,
        output: _,
    } = args;
    let runner = runner.settings()?;
    locate::check_tilegym(&repo.root)?;
    let dirty = repo.tracked_changes()?;
    if !dirty.is_empty() {
        bail!(
            "the work tree has uncommitted changes to tracked files:\n  {}\nhint: commit or stash them first; a session must start from a clean HEAD",
            dirty.join("\n  ")
        );
    }
    let found = locate::kernel(&repo.root, kernel, suite.as_deref())?;
    let gpu = gpu::detect();
    let inspection = super::inspect::plan(&repo.root, &found, gpu.as_deref());
    let test = match test {
        Some(path) => repo_relative(repo, path)?,
        None => inspection.test.clone().map_err(anyhow::Error::msg)?.path,
    };
    let mut allowed = inspection.allowed_paths(&found);
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
        bail!(
            "--deny removed every allowed path\nhint: a session must be allowed to change at least the kernel file"
        );
    }
    refusals::check_start(repo, &test)?;
    refusals::check_step(repo, &allowed)?;
    let branch = format!("{BRANCH_PREFIX}{}-{}", found.name, today());
    if repo.branch_exists(&branch)? {
        bail!(
            "branch {branch} already exists\nhint: continue it with `git checkout {branch}`, or rename it \
             (`git branch -m {branch} {branch}-old`) to start afresh"
        );
    }
    // the queue wait comes before the budget starts
    let place = Runner::acquire(&runner, &repo.root, &sandbox(repo))?;
    let session = Session {
        kernel: found.path.clone(),
        test,
        allowed,
        statistic: *stat,
        thresholds: thresholds.thresholds(),
        python: python.clone().unwrap_or_else(default_python),
        filter: filter.clone(),
        class: class
            .or(intensity.map(kernel_class::classify))
            .or(inspection.class()),
        // on Slurm, the GPU the node reports, not the login node's
        gpu: place.placement().map_or(gpu, |on| on.gpu.clone()),
        runner,
        spread: Vec::new(),
    };
    if session.gpu.is_none() {
        ui::progress_line(
            "warning: no GPU found (nvidia-smi missing or failing); the tests decide whether they can run",
        );
    }
    let plan = Plan {
        session,
        branch,
        kernel_name: found.name,
        place,
        deadline: Instant::now() + *budget,
    };
    plan.runner(repo).check_available()?;
    Ok(plan)
}

impl Plan {
    /// The tests of the session, run within the baseline's budget.
    fn runner<'a>(&'a self, repo: &'a Repo) -> Pytest<'a> {
        Pytest {
            python: &self.session.python,
            root: &repo.root,
            test: &self.session.test,
            filter: self.session.filter.as_deref(),
            sandbox: sandbox(repo),
            deadline: self.deadline,
            place: &self.place,
        }
    }
}

/// Iteration 0: correctness must pass, then the benchmark gives the baseline latency.
/// Iteration 0, what its correctness run found, in words, and its noise floor.
struct Baseline {
    iteration: Iteration,
    tests: String,
    spread: Vec<Spread>,
    /// The JUnit file of each run, for the evidence note.
    junit: Vec<RunFile>,
}

/// The baseline's benchmark runs: at least two, so each config's run-to-run spread is known.
const BASELINE_RUNS: usize = 2;

fn baseline(repo: &Repo, plan: &Plan, original: &str) -> Result<Baseline> {
    let runner = plan.runner(repo);
    let interrupted = || Interrupted("the baseline was not recorded; nothing was created");
    let correctness = runner.correctness()?;
    let mut junit: Vec<RunFile> = RunFile::read(&runner.sandbox, "correctness")
        .into_iter()
        .collect();
    let tests = match correctness {
        CorrectnessRun::Pass { passed, .. } if passed.is_empty() => bail!(
            "no correctness test passed at the baseline (every selected case was skipped), so nothing \
             would show a later change breaking the kernel\nhint: check that the tests can run here (GPU, \
             architecture) and that --filter selects cases that run; nothing was created"
        ),
        CorrectnessRun::Pass { passed, skipped } => match skipped.len() {
            0 => format!("{} correctness tests passed", passed.len()),
            n => format!("{} correctness tests passed ({n} skipped)", passed.len()),
        },
        CorrectnessRun::Fail { failed } => bail!(
            "the baseline fails its correctness tests, so there is nothing to optimize from:\n  {}\nhint: fix them on {original} first; nothing was created",
            failed.join("\n  ")
        ),
        CorrectnessRun::Crash(why) => {
            bail!("the baseline correctness run crashed: {why}\nnothing was created")
        }
        CorrectnessRun::Interrupted => return Err(interrupted().into()),
    };
    let mut runs = Vec::new();
    for number in 1..=BASELINE_RUNS {
        let measured = runner.benchmark(
            plan.session.statistic,
            &format!("baseline {number}/{BASELINE_RUNS}"),
        )?;
        // each run's JUnit file for the evidence note, before the next run replaces it
        junit.extend(
            RunFile::read(&runner.sandbox, "benchmark").map(|run| RunFile {
                name: format!("benchmark-{number}"),
                ..run
            }),
        );
        match measured {
            BenchmarkRun::Measured(configs) => runs.push(configs),
            BenchmarkRun::Crash(why) => {
                bail!("the baseline benchmark failed: {why}\nnothing was created")
            }
            BenchmarkRun::Interrupted => return Err(interrupted().into()),
        }
    }
    let (configs, spread) = stats::combine_runs(&runs).map_err(|(pass, test)| {
        anyhow!("a run of the baseline gave no record for {test} {pass}\nnothing was created")
    })?;
    let latency = geometric_mean(configs.iter().map(|c| c.value))
        .context("the baseline has no usable latency")?;
    let iteration = Iteration {
        number: 0,
        optimization: "baseline".to_string(),
        letter: None,
        cause: None,
        latency_ms: Some(latency),
        correctness: Correctness::Pass,
        status: Status::Keep,
        baseline_ms: latency,
        change_pct: Some(0.0),
        decision: Decision::Continue,
        reason: format!("baseline: {tests}, {} configs measured", configs.len()),
        configs,
        attempt: None,
        placement: plan.place.placement().cloned(),
        rounds: None,
    };
    Ok(Baseline {
        iteration,
        tests,
        spread,
        junit,
    })
}

/// Commits the baseline with the session, remembers it for the hook, and writes the table.
fn commit(
    repo: &Repo,
    journal: &mut Journal,
    mut plan: Plan,
    baseline: Baseline,
) -> Result<StartReport> {
    // recording needs no node: give it back first
    plan.place.release();
    let Baseline {
        iteration: baseline,
        tests,
        spread,
        junit,
    } = baseline;
    let noisy = noisy_configs(&spread, &plan.session.thresholds);
    plan.session.spread = spread;
    let mut block = Block::default();
    baseline.write(&mut block);
    plan.session.write(&mut block);
    let latency = baseline.latency_ms.expect("the baseline was measured");
    let subject = format!(
        "cutile-perf: baseline {} {} ms",
        plan.kernel_name,
        fmt_ms(Some(latency))
    );
    journal.enter(repo, Phase::CommittingBaseline)?;
    let commit = repo.commit(&render_message(&subject, None, &block), true)?;
    Evidence::new(&plan.session, 0, plan.session.gpu.clone(), junit).attach(repo, &commit)?;
    journal.enter(repo, Phase::WritingTable)?;
    repo.remember_baseline(&plan.branch, &commit)?;
    let configs = baseline.configs.clone();
    let history = History {
        session: plan.session.clone(),
        baseline_commit: commit.clone(),
        iterations: vec![(commit.clone(), baseline)],
        foreign: Default::default(),
    };
    let table = write_table(repo, &history)?;
    Ok(StartReport {
        branch: plan.branch,
        commit,
        session: plan.session,
        iteration: 0,
        latency_ms: latency,
        configs,
        table,
        tests,
        noisy,
    })
}

/// Configs whose run-to-run spread at the baseline is more than half the regression limit: the
/// thresholds cannot tell a change from noise there without many paired rounds.
fn noisy_configs(spread: &[Spread], limits: &Thresholds) -> Vec<Spread> {
    spread
        .iter()
        .filter(|s| s.spread_pct > limits.regression_pct / 2.0)
        .cloned()
        .collect()
}

fn render(report: &StartReport, json: bool, out: &mut impl Write) -> Result<()> {
    if json {
        return ui::write_json(out, report);
    }
    let session = &report.session;
    writeln!(out, "{} {}", ui::bold("session"), report.branch)?;
    writeln!(out, "  kernel     {}", session.kernel)?;
    writeln!(out, "  test       {}", session.test)?;
    writeln!(out, "  allowed    {}", session.allowed.join(", "))?;
    writeln!(
        out,
        "  gpu        {}",
        session.gpu.as_deref().unwrap_or("none found")
    )?;
    writeln!(out, "  runner     {}", session.runner.describe())?;
    writeln!(
        out,
        "{} iteration 0: {} ms ({} of {} configs, {})",
        ui::bold("baseline"),
        fmt_ms(Some(report.latency_ms)),
        session.statistic,
        report.configs.len(),
        report.tests
    )?;
    if !report.noisy.is_empty() {
        writeln!(
            out,
            "{} {} configs moved more than half the {}% limit between the baseline's runs:",
            ui::bold("noise"),
            report.noisy.len(),
            decision::fmt_pct(session.thresholds.regression_pct)
        )?;
        for s in &report.noisy {
            writeln!(out, "  {:.2}%  {} {}", s.spread_pct, s.test, s.pass)?;
        }
        writeln!(
            out,
            "  each step will need more paired rounds for them; a larger nrep in their test, or a \
             --filter without them, makes the loop faster and surer"
        )?;
    }
    writeln!(
        out,
        "next: change {} (one optimization), then `git cutile-perf step \"<what you changed>\"`",
        session.kernel
    )?;
    Ok(())
}

/// A journal left by a killed `start` is this verb's own half-made branch: it is finished or undone
/// before starting afresh; one left by `step` needs `repair`.
fn clean_up_interrupted_start(repo: &Repo) -> Result<()> {
    if let Some(line) = recovery::end_orphaned_tests(repo)? {
        ui::progress_line(&line);
    }
    match Journal::load(repo)? {
        Some(journal) if journal.verb == Verb::Start => {
            let repaired = recovery::repair(repo, &journal)?;
            ui::progress_line(&format!("{}: {}", journal.describe(), repaired.what));
            Ok(())
        }
        _ => recovery::refuse_unfinished(repo),
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

pub fn default_python() -> String {
    if which::which("python3").is_ok() {
        "python3"
    } else {
        "python"
    }
    .to_string()
}

/// The local date as YYYYMMDD.
fn today() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: localtime_r only writes the tm we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    format!(
        "{:04}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday
    )
}
