//! `campaign`: a session per kernel of a checkout, each in a worktree of its own, their baselines
//! measured by one worker per GPU (or one Slurm array job), in one record (`record::campaign`) and one
//! table and page; agents then claim the started sessions one each (`campaign next --claim`).

mod slurm;
mod summary;
mod work;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::features::inspect::coverage::{Row as Covered, coverage};
use crate::features::locate;
use crate::record::campaign::{self, Campaign, Entry, Lease, State};
use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::gpu;
use crate::system::process::{self, Interrupted};
use crate::system::process_identity::ProcessIdentity;
use crate::system::runner::{RunnerKind, RunnerSettings};
use crate::system::ui::{Render, Ui};
pub use summary::{Row, Speedup};
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

/// One campaign by name (the newest when none).
#[derive(Debug, Default)]
pub struct Named {
    pub name: Option<String>,
}

/// `campaign next`: the next started session no agent holds, and whether to claim it.
#[derive(Debug)]
pub struct NextOptions {
    pub name: Option<String>,
    pub claim: bool,
    /// The process that holds the claim; default: the one that ran this command.
    pub holder: Option<u32>,
    pub lease: Duration,
}

/// The campaign as `start`, `resume`, `status` and `table` report it.
#[derive(Debug, Serialize)]
pub struct CampaignReport {
    pub name: String,
    pub base: String,
    pub runner: String,
    pub kernels: Vec<Row>,
    /// How many kernels are in each state.
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The geometric-mean speedup over the kernels with a session, with its interval.
    pub speedup: Option<Speedup>,
    #[serde(skip)]
    table_only: bool,
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
        gpus: gpus.clone(),
        created: campaign::now(),
        kernels,
    };
    campaign::create(repo, &record)?;
    ui.progress(&format!(
        "campaign {name}: {} kernel(s) from {}",
        record.kernels.len(),
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
) -> Result<CampaignReport> {
    let record = campaign::require(repo, name)?;
    campaign::update(repo, &record.name, "resumed", |c| {
        for entry in &mut c.kernels {
            if entry.state == State::Failed || entry.waiting() {
                entry.requeue(None);
            }
        }
        Ok(Some(()))
    })?;
    let runner = RunnerSettings {
        kind: RunnerKind::parse(&record.runner).unwrap_or(RunnerKind::Local),
        ..RunnerSettings::default()
    };
    let budget = flag_duration(&record.start_args, "--budget");
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
    if runner.kind == RunnerKind::Slurm {
        let waiting = campaign::require(repo, Some(&record.name))?
            .kernels
            .iter()
            .filter(|e| e.waiting())
            .count();
        slurm::array(repo, &record.name, waiting, workers.jobs, runner, ui.sink())?;
    } else {
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
        results.into_iter().collect::<Result<Vec<()>>>()?;
    }
    if process::interrupted() {
        return Err(hinted(
            Interrupted("the campaign stopped its workers; each session is whole or absent")
                .to_string(),
            "`git cutile-perf campaign resume` runs the kernels that did not finish",
        ));
    }
    Ok(())
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
    let budget = flag_duration(&record.start_args, "--budget");
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

/// `campaign status` and `campaign table`: the record, each session read from its worktree.
pub fn report(repo: &Repo, name: Option<&str>, table_only: bool) -> Result<CampaignReport> {
    let record = campaign::require(repo, name)?;
    let kernels = summary::rows(&record);
    let mut counts = std::collections::BTreeMap::new();
    for row in &kernels {
        *counts.entry(row.state.clone()).or_insert(0) += 1;
    }
    let speedups: Vec<Speedup> = kernels.iter().filter_map(|row| row.speedup).collect();
    Ok(CampaignReport {
        name: record.name,
        base: record.base,
        runner: record.runner,
        speedup: summary::geometric_mean(&speedups),
        kernels,
        counts,
        table_only,
    })
}

/// What `campaign report` wrote.
#[derive(Debug, Serialize)]
pub struct PageReport {
    pub name: String,
    /// The campaign's page.
    pub report: PathBuf,
    /// Each started session's own report, which the page links.
    pub sessions: Vec<PathBuf>,
}

/// `campaign report`: the page, and each started session's report it links.
pub fn page(repo: &Repo, name: Option<&str>, out: Option<PathBuf>) -> Result<PageReport> {
    let record = campaign::require(repo, name)?;
    let rows = summary::rows(&record);
    let reports: Vec<Option<PathBuf>> = record.kernels.iter().map(session_report).collect();
    let speedups: Vec<Speedup> = rows.iter().filter_map(|row| row.speedup).collect();
    let html = summary::html(&record, &rows, summary::geometric_mean(&speedups), &reports);
    let path = match out {
        Some(path) => path,
        None => campaign_dir(repo, &record.name)?.join("campaign.html"),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, html).with_context(|| format!("could not write {}", path.display()))?;
    Ok(PageReport {
        name: record.name,
        report: std::path::absolute(&path)?,
        sessions: reports.into_iter().flatten().collect(),
    })
}

/// A started session's report, written in its worktree's sandbox.
fn session_report(entry: &Entry) -> Option<PathBuf> {
    let dir = entry
        .worktree
        .as_deref()
        .filter(|_| entry.state == State::Started)?;
    let repo = Repo::discover(std::path::Path::new(dir)).ok()?;
    let history =
        crate::record::history::read(&repo, crate::record::history::Configs::All).ok()??;
    let path = super::in_sandbox(&repo, "perf_results.html").ok()?;
    super::write_report(&repo, &history, path)
        .ok()
        .map(|(path, _)| path)
}

/// What `campaign next` hands an agent.
#[derive(Debug, Serialize)]
pub struct NextReport {
    pub name: String,
    /// The session handed over; none when every started one is held or stopped.
    pub kernel: Option<String>,
    pub suite: Option<String>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The claim, when `--claim` took one.
    pub lease: Option<Lease>,
    /// What to do now, in one sentence.
    pub sentence: String,
}

/// `campaign next [--claim]`: the first started session whose loop goes on and that no live lease
/// holds; a holder asking again gets its own claim back, renewed.
pub fn next(repo: &Repo, options: &NextOptions) -> Result<NextReport> {
    let record = campaign::require(repo, options.name.as_deref())?;
    let holder_pid = options
        .holder
        .unwrap_or_else(|| std::os::unix::process::parent_id());
    let holder = ProcessIdentity::of(holder_pid)
        .with_context(|| format!("the holding process {holder_pid} does not run"))?;
    let open: Vec<String> = summary::rows(&record)
        .into_iter()
        .filter(|row| row.state == "started")
        .map(|row| format!("{}/{}", row.suite, row.kernel))
        .collect();
    let pick = |c: &mut Campaign| -> Option<usize> {
        let own = c.kernels.iter().position(|e| {
            e.lease.as_ref().is_some_and(|l| l.is(&holder) && l.held()) && e.state == State::Started
        });
        own.or_else(|| {
            c.kernels.iter().position(|e| {
                open.contains(&e.label()) && !e.lease.as_ref().is_some_and(Lease::held)
            })
        })
    };
    let chosen = if options.claim {
        let lease = Lease::new(Some(holder.clone()), options.lease.as_secs())?;
        campaign::update(repo, &record.name, "an agent claims a kernel", |c| {
            let Some(index) = pick(c) else {
                return Ok(None);
            };
            c.kernels[index].lease = Some(lease.clone());
            Ok(Some(c.kernels[index].clone()))
        })?
    } else {
        let mut copy = record.clone();
        pick(&mut copy).map(|index| copy.kernels[index].clone())
    };
    let sentence = match &chosen {
        Some(entry) => format!(
            "Work in {} (branch {}): run `git cutile-perf status --json` there and follow its next_action; \
             one agent per session",
            entry.worktree.as_deref().unwrap_or("?"),
            entry.branch.as_deref().unwrap_or("?")
        ),
        None => "Every started session of the campaign is held by an agent or has stopped; \
                 `git cutile-perf campaign status` shows them"
            .to_string(),
    };
    Ok(NextReport {
        name: record.name,
        kernel: chosen.as_ref().map(|e| e.kernel.clone()),
        suite: chosen.as_ref().map(|e| e.suite.clone()),
        worktree: chosen.as_ref().and_then(|e| e.worktree.clone()),
        branch: chosen.as_ref().and_then(|e| e.branch.clone()),
        lease: chosen
            .as_ref()
            .and_then(|e| e.lease.clone())
            .filter(|_| options.claim),
        sentence,
    })
}

/// What `campaign verify` found in each started session.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub name: String,
    pub sessions: Vec<Verified>,
}

#[derive(Debug, Serialize)]
pub struct Verified {
    pub kernel: String,
    pub suite: String,
    pub branch: Option<String>,
    pub iterations: usize,
    /// Each departure from the session's record; empty: it holds.
    pub findings: Vec<String>,
}

/// `campaign verify`: `verify` in every started session's worktree.
pub fn verify(repo: &Repo, name: Option<&str>) -> Result<VerifyReport> {
    let record = campaign::require(repo, name)?;
    let mut sessions = Vec::new();
    for entry in record.kernels.iter().filter(|e| e.state == State::Started) {
        let dir = entry
            .worktree
            .as_deref()
            .context("a started kernel has a worktree")?;
        let audited =
            Repo::discover(std::path::Path::new(dir)).and_then(|tree| super::verify::run(&tree));
        let (iterations, findings) = match audited {
            Ok(report) => (
                report.iterations,
                report.findings.iter().map(|f| f.to_string()).collect(),
            ),
            Err(e) => (0, vec![format!("its session cannot be audited: {e:#}")]),
        };
        sessions.push(Verified {
            kernel: entry.kernel.clone(),
            suite: entry.suite.clone(),
            branch: entry.branch.clone(),
            iterations,
            findings,
        });
    }
    Ok(VerifyReport {
        name: record.name,
        sessions,
    })
}

impl VerifyReport {
    /// Fails when a session has a finding.
    pub fn verdict(&self) -> Result<()> {
        let failing: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| !s.findings.is_empty())
            .map(|s| format!("{}/{}", s.suite, s.kernel))
            .collect();
        match failing.is_empty() {
            true => Ok(()),
            false => Err(
                crate::verbs::errors::Reported(crate::rules::hint::Hinted::new(
                    format!(
                        "verify found departures in {} session(s): {}",
                        failing.len(),
                        failing.join(", ")
                    ),
                    "run `git cutile-perf verify` in each one's worktree for the details",
                ))
                .into(),
            ),
        }
    }
}

/// The kernels the options name, queued, from the checkout's coverage table.
fn select(repo: &Repo, options: &StartOptions) -> Result<Vec<Entry>> {
    let all = coverage(&repo.root).kernels;
    let entry = |row: &Covered| Entry::queued(&row.kernel, &row.suite, row.class);
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
    let found = gpu::list(|args| process::command("nvidia-smi", args));
    let (gpus, _) = gpu::session_gpus(asked, &found)?;
    Ok(gpus)
}

/// One kernel's time limit: as given, else its budget and the setup around the baseline.
fn timeout(workers: &Workers, budget: Option<Duration>) -> Duration {
    workers
        .timeout
        .unwrap_or(budget.unwrap_or(DEFAULT_BUDGET) + SETUP_ALLOWANCE)
}

/// The duration a flag of `start`'s has in `args`.
fn flag_duration(args: &[String], flag: &str) -> Option<Duration> {
    let at = args.iter().position(|a| a == flag)?;
    crate::rules::units::parse_duration(args.get(at + 1)?).ok()
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

impl Render for CampaignReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if !self.table_only {
            let counts: Vec<String> = self
                .counts
                .iter()
                .map(|(s, n)| format!("{n} {s}"))
                .collect();
            writeln!(
                out,
                "campaign {} from {} ({}): {}",
                self.name,
                self.base,
                self.runner,
                counts.join(", ")
            )?;
        }
        write!(out, "{}", summary::text(&self.kernels))?;
        let mean = self.speedup.map_or("none yet".into(), |s| s.shown());
        writeln!(
            out,
            "geometric-mean speedup over the started sessions: {mean}"
        )?;
        Ok(())
    }
}

impl Render for PageReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        writeln!(ui.out(), "{}", self.report.display())?;
        Ok(())
    }
}

impl Render for NextReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        if let (Some(kernel), Some(suite)) = (&self.kernel, &self.suite) {
            let claimed = if self.lease.is_some() {
                "claimed"
            } else {
                "next"
            };
            writeln!(ui.out(), "{claimed}: {suite}/{kernel}")?;
        }
        writeln!(ui.out(), "{}", self.sentence)?;
        Ok(())
    }
}

impl Render for VerifyReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        for session in &self.sessions {
            let verdict = match session.findings.is_empty() {
                true => "holds".to_string(),
                false => format!("{} finding(s)", session.findings.len()),
            };
            writeln!(
                out,
                "{}/{}: {} iteration(s), {verdict}",
                session.suite, session.kernel, session.iterations
            )?;
            for finding in &session.findings {
                writeln!(out, "  {finding}")?;
            }
        }
        writeln!(
            out,
            "campaign {}: {} session(s) verified",
            self.name,
            self.sessions.len()
        )?;
        Ok(())
    }
}
