//! `campaign`: a session per kernel of a checkout, each in a worktree of its own, their baselines
//! measured by one worker per GPU (or one Slurm array job), in one record (`record::campaign`) and one
//! table and page; agents then claim the started sessions one each (`campaign next --claim`).

mod agents;
mod summary;
mod views;
mod work;

use std::time::Duration;

use anyhow::{Context, Result};

use crate::features::inspect::coverage::{Row as Covered, coverage};
use crate::features::locate;
use crate::record::campaign::{self, Campaign, Entry, State};
use crate::rules::hint::{Hinted, hinted};
use crate::rules::units::counted;
use crate::system::git::Repo;
use crate::system::gpu;
use crate::system::process::{self, Interrupted};
use crate::system::pytest::{check_pytest, default_python};
use crate::system::runner::{Local, Runner, RunnerKind, RunnerSettings, slurm};
use crate::system::ui::Ui;
pub use agents::{NextOptions, NextReport, Verified, VerifyReport, next, verify};
pub use summary::{Row, Speedup};
pub use views::{CampaignReport, PageReport, page, report};
use work::{Worker, campaign_dir};

/// What the kernel gets beyond `start`'s `--budget` before a worker stops it: the checks, the class
/// measure and the compile facts around the baseline.
const SETUP_ALLOWANCE: Duration = Duration::from_secs(5 * 60);
/// `start`'s budget when its flags give none.
const DEFAULT_BUDGET: Duration = Duration::from_secs(10 * 60);

/// `campaign start`: which kernels, where they run, and `start`'s own flags for each.
#[derive(Debug)]
pub struct StartOptions {
    pub name: Option<String>,
    /// Kernels by name (`suite/kernel` where a name is in several suites); none: `--all` or `--suite`.
    pub kernels: Vec<String>,
    pub all: bool,
    pub suite: Option<String>,
    pub workers: Workers,
    pub runner: RunnerSettings,
    /// `start`'s flags, given to every session as they are.
    pub start_args: Vec<String>,
    /// The baseline's time limit (`start --budget`), which the kernel's own limit allows for.
    pub budget: Option<Duration>,
}

/// Where the local workers run: one per GPU of `gpus`, else `jobs` of them on the environment's GPU.
#[derive(Debug, Default)]
pub struct Workers {
    pub gpus: Option<String>,
    pub jobs: Option<u32>,
    /// `--no-gpu`: nothing to look for, and no `--gpus` for `start`.
    pub no_gpu: bool,
    /// How long one kernel may take from getting its GPU; default: the budget and a setup allowance.
    pub timeout: Option<Duration>,
}

/// `campaign start`: the record, then every kernel's baseline.
pub fn start(ui: &mut Ui, repo: &Repo, options: &StartOptions) -> Result<CampaignReport> {
    locate::check_tilegym(&repo.root)?;
    let kernels = select(repo, options)?;
    let gpus = pinned_gpus(&options.workers)?;
    let name = match &options.name {
        Some(name) => name.clone(),
        None => default_name(repo)?,
    };
    if repo
        .git(&["check-ref-format", &campaign::ref_name(&name)])
        .is_err()
    {
        return Err(hinted(
            format!("{name:?} cannot name a campaign (its ref would be invalid)"),
            "use letters, digits, - and _, e.g. --name liger-h100",
        ));
    }
    let record = Campaign {
        name: name.clone(),
        base: repo.branch()?.unwrap_or(repo.head()?),
        start_args: options.start_args.clone(),
        runner: options.runner.kind.as_str().to_string(),
        slurm_args: options.runner.slurm.args.clone(),
        queue_timeout_s: options
            .runner
            .slurm
            .queue_timeout
            .map(|wait| wait.as_secs()),
        gpus: gpus.clone(),
        created: campaign::now(),
        kernels,
    };
    if matches!(options.runner.kind, RunnerKind::Local) {
        check_sessions_python(repo, &record)?;
    }
    campaign::create(repo, &record)?;
    ui.progress(&format!(
        "campaign {name}: {} from {}",
        counted(record.kernels.len() as u64, "kernel"),
        record.base
    ));
    let timeout = timeout(&options.workers, options.budget);
    run_kernels(
        ui,
        repo,
        &record,
        &options.workers,
        &options.runner,
        timeout,
    )?;
    report(repo, Some(&name), false)
}

/// `campaign resume`: the kernels that are queued, were left running or failed, again.
pub fn resume(
    ui: &mut Ui,
    repo: &Repo,
    name: Option<&str>,
    workers: &Workers,
    budget: Option<Duration>,
) -> Result<CampaignReport> {
    let found = campaign::require(repo, name)?;
    if RunnerKind::parse(&found.runner) != Some(RunnerKind::Slurm) {
        check_sessions_python(repo, &found)?;
    }
    let name = found.name;
    let record = campaign::update(repo, &name, "resumed", |c| {
        if let Some(budget) = budget {
            c.set_start_flag("--budget", crate::system::runner::slurm::fmt_wait(budget));
        }
        for entry in &mut c.kernels {
            if entry.state == State::Failed || entry.waiting() {
                entry.requeue(None);
            }
        }
        Ok(Some(c.clone()))
    })?
    .context("a campaign's record is always updated")?;
    let runner = RunnerSettings {
        kind: RunnerKind::parse(&record.runner).unwrap_or(RunnerKind::Local),
        slurm: slurm::SlurmSettings {
            args: record.slurm_args.clone(),
            queue_timeout: record.queue_timeout_s.map(Duration::from_secs),
        },
    };
    let budget = record
        .start_flag("--budget")
        .and_then(|budget| crate::rules::units::parse_duration(budget).ok());
    let workers = Workers {
        gpus: workers
            .gpus
            .clone()
            .or_else(|| (!record.gpus.is_empty()).then(|| record.gpus.join(","))),
        no_gpu: workers.no_gpu || record.start_args.iter().any(|a| a == "--no-gpu"),
        jobs: workers.jobs,
        timeout: workers.timeout,
    };
    run_kernels(
        ui,
        repo,
        &record,
        &workers,
        &runner,
        timeout(&workers, budget),
    )?;
    report(repo, Some(&record.name), false)
}

/// Runs the waiting kernels: local workers, or one Slurm array job; an interrupt ends them all.
fn run_kernels(
    ui: &mut Ui,
    repo: &Repo,
    record: &Campaign,
    workers: &Workers,
    runner: &RunnerSettings,
    timeout: Duration,
) -> Result<()> {
    match runner.kind {
        RunnerKind::Slurm => array_job(ui, repo, record, workers.jobs, runner)?,
        RunnerKind::Local => local_workers(ui, repo, record, workers, timeout)?,
    }
    if process::interrupted() {
        // typed, so that the exit code is an interrupted command's (130), with the hint beneath it
        return Err(anyhow::Error::new(Hinted::new(
            "each session is whole or absent",
            "`git cutile-perf campaign resume` runs the kernels that did not finish",
        ))
        .context(Interrupted("the campaign stopped its workers")));
    }
    Ok(())
}

/// One Slurm array job, a task per waiting kernel, each running `campaign work`.
fn array_job(
    ui: &mut Ui,
    repo: &Repo,
    record: &Campaign,
    jobs: Option<u32>,
    runner: &RunnerSettings,
) -> Result<()> {
    let waiting = campaign::require(repo, Some(&record.name))?
        .kernels
        .iter()
        .filter(|e| e.waiting())
        .count();
    let program = std::env::current_exe().context("cannot find this program's path")?;
    let task = [
        program.display().to_string(),
        "campaign".into(),
        "work".into(),
        "--name".into(),
        record.name.clone(),
    ];
    let logs = campaign_dir(repo, &record.name)?.join("logs");
    std::fs::create_dir_all(&logs)?;
    let array = slurm::Array {
        task: &task,
        count: waiting,
        jobs,
        dir: &repo.root,
        logs: &logs,
        settings: &runner.slurm,
    };
    slurm::run_array(&array, ui.sink())
}

/// One worker per pinned GPU (or `--jobs` of them on the environment's), each a thread with the
/// repository opened for itself, until no kernel waits.
fn local_workers(
    ui: &mut Ui,
    repo: &Repo,
    record: &Campaign,
    workers: &Workers,
    timeout: Duration,
) -> Result<()> {
    let gpus = pinned_gpus(workers)?;
    let slots: Vec<Option<String>> = match gpus.is_empty() {
        true => vec![None; workers.jobs.unwrap_or(1).max(1) as usize],
        false => gpus.into_iter().map(Some).collect(),
    };
    let progress = ui.sink().clone();
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = slots
            .into_iter()
            .map(|gpu| {
                let (progress, root) = (&progress, &repo.root);
                scope.spawn(move || {
                    let worker = Worker {
                        repo: Repo::discover(root)?,
                        name: &record.name,
                        gpu,
                        pass_gpu: !workers.no_gpu,
                        job: None,
                        timeout,
                        progress,
                    };
                    worker.run(false)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a worker panicked")))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// `campaign work`: one kernel taken and run here, as a Slurm array task does.
pub fn work(ui: &mut Ui, repo: &Repo, name: Option<&str>) -> Result<CampaignReport> {
    let record = campaign::require(repo, name)?;
    let job = std::env::var("SLURM_ARRAY_JOB_ID").ok().map(|job| {
        format!(
            "{job}_{}",
            std::env::var("SLURM_ARRAY_TASK_ID").unwrap_or_default()
        )
    });
    let budget = record
        .start_flag("--budget")
        .and_then(|budget| crate::rules::units::parse_duration(budget).ok());
    let progress = ui.sink().clone();
    Worker {
        repo: Repo::discover(&repo.root)?,
        name: &record.name,
        gpu: None,
        pass_gpu: false,
        job,
        timeout: budget.unwrap_or(DEFAULT_BUDGET) + SETUP_ALLOWANCE,
        progress: &progress,
    }
    .run(true)?;
    report(repo, Some(&record.name), false)
}

/// The kernels the options name, queued, from the checkout's coverage table.
fn select(repo: &Repo, options: &StartOptions) -> Result<Vec<Entry>> {
    let all = coverage(&repo.root).kernels;
    let entry = |row: &Covered| Entry::queued(&row.kernel, &row.suite, row.measured_by);
    let in_suite = |row: &&Covered| options.suite.as_ref().is_none_or(|s| &row.suite == s);
    if options.kernels.is_empty() {
        if !options.all && options.suite.is_none() {
            return Err(hinted(
                "name the campaign's kernels",
                "give kernel names, --all (every kernel file of the checkout) or --suite S (one suite)",
            ));
        }
        let chosen: Vec<Entry> = all.iter().filter(in_suite).map(entry).collect();
        if chosen.is_empty() {
            return Err(hinted(
                format!(
                    "suite {:?} has no kernel file",
                    options.suite.as_deref().unwrap_or("")
                ),
                "`git cutile-perf inspect --all` lists the kernels and their suites",
            ));
        }
        return Ok(chosen);
    }
    let mut chosen: Vec<Entry> = Vec::new();
    for name in &options.kernels {
        let (suite, kernel) = match name.split_once('/') {
            Some((suite, kernel)) => (Some(suite.to_string()), kernel),
            None => (options.suite.clone(), name.as_str()),
        };
        let found: Vec<&Covered> = all
            .iter()
            .filter(|row| row.kernel == kernel && suite.as_ref().is_none_or(|s| &row.suite == s))
            .collect();
        match found.as_slice() {
            [row] => chosen.push(entry(row)),
            [] => {
                return Err(hinted(
                    format!("no kernel file is named {name}"),
                    "`git cutile-perf inspect --all` lists the kernels and their suites",
                ));
            }
            several => {
                let suites: Vec<&str> = several.iter().map(|r| r.suite.as_str()).collect();
                return Err(hinted(
                    format!("{kernel} is in several suites: {}", suites.join(", ")),
                    format!("name it as suite/kernel, e.g. {}/{kernel}", suites[0]),
                ));
            }
        }
    }
    chosen.dedup_by(|a, b| a.label() == b.label());
    Ok(chosen)
}

/// The GPUs the workers pin, checked against nvidia-smi as `start --gpus` checks them.
fn pinned_gpus(workers: &Workers) -> Result<Vec<String>> {
    let Some(asked) = &workers.gpus else {
        return Ok(Vec::new());
    };
    let here = std::env::current_dir()?;
    let found = gpu::list(|args| Local.command("nvidia-smi", args, &here));
    let (gpus, _) = gpu::session_gpus(asked, &found)?;
    Ok(gpus)
}

/// One kernel's time limit: as given, else its budget and the setup around the baseline.
fn timeout(workers: &Workers, budget: Option<Duration>) -> Duration {
    workers
        .timeout
        .unwrap_or(budget.unwrap_or(DEFAULT_BUDGET) + SETUP_ALLOWANCE)
}

/// Refuses a campaign whose sessions' Python has no pytest here: every kernel would fail alike, one
/// after another, and a scaffold's tests would seem to make no call of their op.
fn check_sessions_python(repo: &Repo, record: &Campaign) -> Result<()> {
    let python = match record.start_flag("--python") {
        Some(python) => python.to_string(),
        None => default_python(&Local, &repo.root),
    };
    check_pytest(&Local, &python, &repo.root)
}

/// Today's date, with a number after it when a campaign of that name exists.
fn default_name(repo: &Repo) -> Result<String> {
    let today = jiff::Zoned::now().strftime("%Y%m%d").to_string();
    let taken = campaign::names(repo)?;
    Ok((1..)
        .map(|n| match n {
            1 => today.clone(),
            n => format!("{today}-{n}"),
        })
        .find(|name| !taken.contains(name))
        .expect("some number is free"))
}
