//! `diagnose`: profiles one config of an iteration under Nsight Compute and names its bottleneck
//! (rules in `crate::features::diagnose`). The iteration's code runs from a temporary detached worktree under
//! the git dir when it is not what the work tree holds; the result is cached as a git note on the
//! code's commit (`refs/notes/cutile-perf-diagnose`), where `compare` reads it.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::features::diagnose::Diagnosis;
use crate::features::diagnose::cache::{NOTES_REF, remember};
use crate::features::diagnose::case::Place;
use crate::features::diagnose::case::Source;
use crate::features::diagnose::profile::{heaviest, profile};
use crate::record::history::{
    Configs, History, code_commit, iteration, made_sandbox, require_history,
};
use crate::record::session::{Iteration, short};
use crate::rules::compile::CompileFacts;
use crate::rules::hint::{Hinted, hinted};
use crate::system::git::Repo;
use crate::system::runner::{self, Runner};
use crate::system::ui::{self, Render, Ui};

/// What `diagnose` found, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DiagnoseReport {
    pub iteration: u32,
    /// The commit whose code was profiled (the attempt, for a reverted or crashed iteration).
    pub commit: String,
    pub config: String,
    pub node_id: String,
    pub launches_profiled: usize,
    #[serde(flatten)]
    pub diagnosis: Diagnosis,
    pub compile: Option<CompileFacts>,
    /// Nsight Compute's own report of the run (`--save DIR`), to open in its UI.
    pub saved_report: Option<PathBuf>,
}

/// Which iteration and config to profile, and how.
#[derive(Debug)]
pub struct DiagnoseOptions {
    /// Default: the current baseline.
    pub iteration: Option<u32>,
    /// The config's test id; default: the iteration's slowest config.
    pub config: Option<String>,
    /// Time limit for the profiled run.
    pub budget: Duration,
    /// Keep Nsight Compute's report in this folder.
    pub save: Option<PathBuf>,
}

pub fn run(ui: &mut Ui, repo: &Repo, args: &DiagnoseOptions) -> Result<DiagnoseReport> {
    let history = require_history(repo, Configs::All)?;
    let (commit, iteration) = match args.iteration {
        Some(number) => find(&history, number)?,
        None => {
            let baseline = history.current_baseline();
            (code_commit(&history, baseline.number)?, baseline)
        }
    };
    let config = match &args.config {
        Some(config) => config.clone(),
        None => heaviest(&iteration.configs)
            .or_else(|| heaviest(&history.current_baseline().configs))
            .ok_or_else(|| {
                hinted(
                    "the iteration records no config to profile",
                    "pass --config TEST_ID",
                )
            })?,
    };
    // the session's GPU: on Slurm, the profile runs on a node allocated for it
    let place = runner::open(
        &history.session.runner,
        &repo.root,
        &made_sandbox(repo)?,
        ui.sink(),
    )?;
    require_ncu(&*place, &repo.root)?;
    let saved_report = match &args.save {
        Some(dir) => Some(report_path(dir, iteration.number, &config)?),
        None => None,
    };
    let source = Source::of(repo, &commit)?;
    let profiled = profile(
        repo,
        &Place {
            runner: &*place,
            gpu: None,
            progress: ui.sink(),
        },
        &history,
        source.path(repo),
        &config,
        saved_report.as_deref(),
        Instant::now() + args.budget,
    )?;
    drop(source);
    place.release();
    remember(repo, &commit, &profiled)?;
    Ok(DiagnoseReport {
        iteration: iteration.number,
        commit,
        config,
        node_id: profiled.node_id,
        launches_profiled: profiled.launches,
        diagnosis: profiled.diagnosis,
        compile: profiled.compile,
        saved_report,
    })
}

impl Render for DiagnoseReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        write!(ui.out(), "{}", render(self))?;
        Ok(())
    }
}

/// The iteration numbered `number` and the commit holding its code.
fn find(history: &History, number: u32) -> Result<(String, &Iteration)> {
    Ok((code_commit(history, number)?, iteration(history, number)?))
}

/// Where `diagnose --save DIR` keeps the report of `config` in iteration `number`: an absolute path (ncu
/// runs elsewhere), named so that each config of each iteration has its own file.
fn report_path(dir: &Path, number: u32, config: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let case = config.rsplit("::").next().unwrap_or(config);
    let words: Vec<&str> = case
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .filter(|w| !w.is_empty())
        .collect();
    let name = format!("iteration-{number}-{}.ncu-rep", words.join("-"));
    Ok(std::path::absolute(dir)?.join(name))
}

fn require_ncu(place: &dyn Runner, root: &Path) -> Result<()> {
    place.find("ncu", root).map(drop).context(Hinted::new(
        "diagnose needs Nsight Compute, and ncu is not on PATH",
        "install Nsight Compute (it comes with the CUDA toolkit, e.g. /usr/local/cuda/bin/ncu) and put it \
         on PATH",
    ))
}

fn render(report: &DiagnoseReport) -> String {
    let d = &report.diagnosis;
    let p = &d.profile;
    let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v:.0}%"));
    let number =
        |v: Option<f64>, digits: usize| v.map_or("n/a".to_string(), |v| format!("{v:.digits$}"));
    let mut out = format!(
        "iteration {} ({}), {}\n{} {}\n  rule     {}\n",
        report.iteration,
        short(&report.commit),
        report.config,
        ui::bold("bottleneck:"),
        d.cause,
        d.because
    );
    out += &format!(
        "  kernel   {} ({} us; median of {} profiled launches)\n",
        p.kernel,
        number(p.duration_us, 1),
        report.launches_profiled
    );
    out += &format!(
        "  speed of light  SM {}  DRAM {}  memory {}  tensor pipe {}\n",
        pct(p.sm_pct),
        pct(p.dram_pct),
        pct(p.memory_pct),
        pct(p.tensor_pipe_pct)
    );
    out += &format!(
        "  occupancy       achieved {} of theoretical {}; {} registers/thread; {} local-memory bytes; {} waves/SM\n",
        pct(p.achieved_occupancy_pct),
        pct(p.theoretical_occupancy_pct),
        number(p.registers_per_thread, 0),
        number(p.local_bytes, 0),
        number(p.waves_per_sm, 2)
    );
    out += &format!("  cached   as a note in {NOTES_REF} (`compare` reads it)\n");
    if let Some(facts) = &report.compile {
        let totals: Vec<String> = facts
            .totals()
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        out += &format!("  compile  {}\n", totals.join(", "));
    }
    if let Some(saved) = &report.saved_report {
        out += &format!(
            "  report   {} (open it in Nsight Compute)\n",
            saved.display()
        );
    }
    out
}
