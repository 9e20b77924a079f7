//! `diagnose`: profiles one config of an iteration under Nsight Compute and names its bottleneck
//! (rules in `crate::diagnose`). The iteration's code runs from a temporary detached worktree under
//! the git dir when it is not what the work tree holds; the result is cached as a git note on the
//! code's commit (`refs/notes/cutile-perf-diagnose`), where `compare` reads it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::require_history;
use crate::cli::DiagnoseArgs;
use crate::diagnose::case::{self, Case, Source};
use crate::diagnose::compile::CompileFacts;
use crate::diagnose::toolchain::{self, Assembler};
use crate::diagnose::{self, Diagnosis, Profile};
use crate::git::Repo;
use crate::history::{Configs, History};
use crate::process;
use crate::records::Measurement;
use crate::session::{Iteration, short};
use crate::{ncu, ui};

/// The notes ref that caches diagnoses, one note per profiled commit.
pub const NOTES_REF: &str = "refs/notes/cutile-perf-diagnose";
/// Launches skipped before profiling: the perf case's first calls compile and warm up.
pub const WARM_UP_LAUNCHES: u32 = 3;
/// Launches profiled; the median one stands for the kernel (`diagnose::representative`).
const PROFILED_LAUNCHES: u32 = 3;
/// How many unknown metrics a profile drops, one run each, before it gives up.
const UNKNOWN_METRIC_RETRIES: u32 = 3;
/// `step` profiles only with at least this much of its budget left.
pub const MIN_STEP_PROFILE: Duration = Duration::from_secs(60);

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

/// One note: the diagnoses of a commit's code, per config, and its compile facts.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Note {
    pub configs: BTreeMap<String, Diagnosis>,
    pub compile: Option<CompileFacts>,
}

pub fn run(repo: &Repo, args: &DiagnoseArgs, out: &mut impl Write) -> Result<DiagnoseReport> {
    let history = require_history(repo, Configs::All)?;
    let (commit, iteration) = match args.iteration {
        Some(number) => find(&history, number)?,
        None => {
            let baseline = history.current_baseline();
            (code_commit(&history, baseline.number), baseline)
        }
    };
    let config = match &args.config {
        Some(config) => config.clone(),
        None => heaviest(&iteration.configs)
            .or_else(|| heaviest(&history.current_baseline().configs))
            .context("the iteration records no config to profile\nhint: pass --config TEST_ID")?,
    };
    require_ncu()?;
    let saved_report = match &args.save {
        Some(dir) => Some(report_path(dir, iteration.number, &config)?),
        None => None,
    };
    let source = Source::of(repo, &commit)?;
    let profiled = profile(
        repo,
        &history,
        source.path(repo),
        &config,
        saved_report.as_deref(),
        Instant::now() + args.budget,
    )?;
    drop(source);
    remember(repo, &commit, &profiled)?;
    let report = DiagnoseReport {
        iteration: iteration.number,
        commit,
        config,
        node_id: profiled.node_id,
        launches_profiled: profiled.launches,
        diagnosis: profiled.diagnosis,
        compile: profiled.compile,
        saved_report,
    };
    if args.output.json {
        ui::write_json(out, &report)?;
    } else {
        write!(out, "{}", render(&report))?;
    }
    Ok(report)
}

/// The diagnosis of the change in the work tree, for `step` once its verdict is known: the current
/// baseline's heaviest config, profiled as the work tree holds it. `Ok(None)` (with a line on stderr
/// saying why, when something was tried) when ncu is missing, no config is recorded, less than
/// [`MIN_STEP_PROFILE`] is left before `deadline`, or the profile failed: the step goes on without it.
/// Only Ctrl-C is an error ([`super::Interrupted`]), so that the step records nothing.
pub fn cause_for(repo: &Repo, history: &History, deadline: Instant) -> Result<Option<Profiled>> {
    if which::which("ncu").is_err() {
        return Ok(None);
    }
    let Some(config) = heaviest(&history.current_baseline().configs) else {
        return Ok(None);
    };
    if deadline.saturating_duration_since(Instant::now()) < MIN_STEP_PROFILE {
        ui::progress_line("no diagnosis: the step's budget is nearly spent");
        return Ok(None);
    }
    ui::progress_line(&format!("diagnosing {config} with ncu ..."));
    match profile(repo, history, repo.root.clone(), &config, None, deadline) {
        Ok(profiled) => Ok(Some(profiled)),
        Err(err) if err.is::<super::Interrupted>() => Err(err),
        Err(err) => {
            ui::progress_line(&format!("warning: no diagnosis: {err:#}"));
            Ok(None)
        }
    }
}

/// The iteration numbered `number` and the commit holding its code.
fn find(history: &History, number: u32) -> Result<(String, &Iteration)> {
    Ok((code_commit(history, number), iteration(history, number)?))
}

/// The iteration numbered `number`, or an error naming those there are.
pub fn iteration(history: &History, number: u32) -> Result<&Iteration> {
    history
        .iterations()
        .find(|it| it.number == number)
        .with_context(|| {
            format!(
                "the session has no iteration {number}\nhint: `git cutile-perf table` lists iterations 0 to {}",
                history.next_number() - 1
            )
        })
}

/// The commit whose tree holds an iteration's code: its attempt when it was undone, else itself.
pub fn code_commit(history: &History, number: u32) -> String {
    let (commit, iteration) = &history.iterations[number as usize];
    iteration.attempt.clone().unwrap_or_else(|| commit.clone())
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

/// The config with the largest latency: the one that weighs most in the time the kernel takes.
pub fn heaviest(configs: &[Measurement]) -> Option<String> {
    configs
        .iter()
        .max_by(|a, b| a.value.total_cmp(&b.value))
        .map(|m| m.test.clone())
}

fn require_ncu() -> Result<()> {
    which::which("ncu").map(drop).context(
        "diagnose needs Nsight Compute, and ncu is not on PATH\nhint: install Nsight Compute (it comes with the \
         CUDA toolkit, e.g. /usr/local/cuda/bin/ncu) and put it on PATH",
    )
}

/// What one profiled run gave.
#[derive(Debug, Clone)]
pub struct Profiled {
    pub config: String,
    pub node_id: String,
    pub launches: usize,
    pub diagnosis: Diagnosis,
    pub compile: Option<CompileFacts>,
}

/// Runs the one pytest case of `config` from `root` under ncu, autotuning off, profiling only the
/// session kernel's own launches after a warm-up (keeping ncu's report at `save`, if given); reads the
/// dumps the run left for compile facts.
fn profile(
    repo: &Repo,
    history: &History,
    root: PathBuf,
    config: &str,
    save: Option<&Path>,
    deadline: Instant,
) -> Result<Profiled> {
    let session = &history.session;
    let names = case::kernel_names(session, &root)?.join("|");
    let case =
        Case::prepare(repo, session, root, config, "diagnose")?.with_plugin(case::PAUSE_TUNING)?;
    ui::progress_line(&format!(
        "profiling {} of {} with ncu ...",
        names.replace('|', ", "),
        case.node_id
    ));
    let launches = profile_launches(&case, &names, save, deadline)?;
    let launch = diagnose::representative(&launches).with_context(|| {
        format!(
            "ncu profiled no launch of {} in {}; see {}",
            names.replace('|', ", "),
            case.node_id,
            case.dir.join("ncu.log").display()
        )
    })?;
    let assembler = Assembler::find(&session.python, &case.root, session.gpu.as_deref());
    let compile = toolchain::gather(&case.dumps, assembler.as_ref(), deadline);
    Ok(Profiled {
        config: config.to_string(),
        node_id: case.node_id,
        launches: launches.len(),
        diagnosis: diagnose::diagnose(&Profile::of(launch)),
        compile: (!compile.is_empty()).then_some(compile),
    })
}

/// The launches of the kernels named by `names` (a regex alternation) that ncu profiled in `case`; a
/// metric this ncu does not know is dropped and the case run again, at most
/// [`UNKNOWN_METRIC_RETRIES`] times. With `save`, ncu exports its report there and the launches are
/// read back from it.
fn profile_launches(
    case: &Case,
    names: &str,
    save: Option<&Path>,
    deadline: Instant,
) -> Result<Vec<ncu::Launch>> {
    let (log, csv) = (case.dir.join("ncu.log"), case.dir.join("ncu.csv"));
    let mut metrics = ncu::select(ncu::query_metrics().as_deref(), &diagnose::wanted());
    let mut retries = UNKNOWN_METRIC_RETRIES;
    loop {
        let ncu_args = ncu::args(
            metrics.clone(),
            names,
            WARM_UP_LAUNCHES,
            PROFILED_LAUNCHES,
            &csv,
        );
        std::fs::remove_file(&csv).ok();
        let env = case.env();
        let profiled = match save {
            None => ncu::run(
                &case.command,
                &ncu_args,
                &case.root,
                &env,
                &log,
                &csv,
                deadline,
            ),
            Some(report) => {
                let exporting = [&ncu_args[..], &export_args(report)].concat();
                ncu::launch(&case.command, &exporting, &case.root, &env, &log, deadline).and_then(
                    |()| ncu::import(report, &case.dir.join("ncu-import.log"), &csv, deadline),
                )
            }
        };
        let err = match profiled {
            Ok(launches) => return Ok(launches),
            Err(_) if process::interrupted() => {
                return Err(super::Interrupted("nothing was profiled or cached").into());
            }
            Err(err) => err,
        };
        // a metric this ncu does not know stops it before the run: profile without it
        let output = read_all(&[&log, &csv]);
        match diagnose::unknown_metric(&output, &metrics) {
            Some(unknown) if retries > 0 => {
                retries -= 1;
                ui::progress_line(&format!(
                    "this ncu does not know {unknown}; profiling without it ..."
                ));
                metrics = diagnose::without(&metrics, &unknown);
            }
            _ => return Err(with_hint(err, &output, &case.dir)),
        }
    }
}

/// ncu's arguments that save its report at `report`, over an older one.
fn export_args(report: &Path) -> [String; 3] {
    [
        "--export".to_string(),
        report.display().to_string(),
        "--force-overwrite".to_string(),
    ]
}

/// The text of each file that exists.
fn read_all(files: &[&Path]) -> String {
    files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// A known ncu failure in its output replaces the generic error.
fn with_hint(err: anyhow::Error, output: &str, dir: &Path) -> anyhow::Error {
    match diagnose::failure_hint(output) {
        Some(hint) => anyhow::anyhow!("{hint} (ncu's output is in {})", dir.display()),
        None => err,
    }
}

/// The cached note of `commit`, if any.
pub fn recall(repo: &Repo, commit: &str) -> Option<Note> {
    let text = repo
        .git(&["notes", "--ref", NOTES_REF, "show", commit])
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Adds a diagnosis to `commit`'s note (the one `compare` reads), keeping its other configs.
pub fn remember(repo: &Repo, commit: &str, profiled: &Profiled) -> Result<()> {
    let mut note = recall(repo, commit).unwrap_or_default();
    note.configs
        .insert(profiled.config.clone(), profiled.diagnosis.clone());
    if profiled.compile.is_some() {
        note.compile = profiled.compile.clone();
    }
    let text = serde_json::to_string(&note)?;
    repo.git(&[
        "notes", "--ref", NOTES_REF, "add", "-f", "-m", &text, commit,
    ])
    .context("cannot cache the diagnosis in a git note")?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Decision, Status};
    use crate::session::tests::{iteration, session};

    #[test]
    fn a_reverted_iteration_is_profiled_at_its_attempt_and_the_slowest_config_weighs_most() {
        let mut reverted = iteration(1, Status::Revert, Some(4.0), Decision::TryNext);
        reverted.attempt = Some("a1".into());
        let history = History {
            session: session(),
            baseline_commit: "c0".into(),
            iterations: vec![
                (
                    "c0".into(),
                    iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                ),
                ("c1".into(), reverted),
            ],
            foreign: Default::default(),
        };
        assert_eq!(code_commit(&history, 0), "c0");
        assert_eq!(code_commit(&history, 1), "a1");
        let err = iteration_or_err(&history, 7);
        assert!(err.contains("no iteration 7"), "{err}");
        assert!(err.contains("iterations 0 to 1"), "{err}");

        let measure = |test: &str, value| Measurement {
            pass: "forward".into(),
            test: test.into(),
            value,
        };
        let configs = [
            measure("small", 0.1),
            measure("large", 1.5),
            measure("mid", 0.7),
        ];
        assert_eq!(heaviest(&configs).as_deref(), Some("large"));
        assert_eq!(heaviest(&[]), None);
    }

    fn iteration_or_err(history: &History, number: u32) -> String {
        format!("{:#}", super::iteration(history, number).unwrap_err())
    }
}
