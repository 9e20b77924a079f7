//! Profiling one config of a session under Nsight Compute: the one pytest case of the config, run
//! from a given tree with autotuning paused, only the session kernel's own launches profiled after a
//! warm-up; the rules of this module name the bottleneck. Used by `diagnose` and, after its verdict,
//! by `step`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::case::{self, Case, Place};
use super::toolchain::{self, Assembler};
use super::{Diagnosis, Profile};
use crate::record::history::History;
use crate::rules::compile::CompileFacts;
use crate::rules::records::Measurement;
use crate::system::git::Repo;
use crate::{rules::hint, system::ncu, system::process};

/// Launches skipped before profiling: the perf case's first calls compile and warm up.
pub const WARM_UP_LAUNCHES: u32 = 3;
/// Launches profiled; the median one stands for the kernel (`super::representative`).
const PROFILED_LAUNCHES: u32 = 3;
/// How many unknown metrics a profile drops, one run each, before it gives up.
const UNKNOWN_METRIC_RETRIES: u32 = 3;
/// `step` profiles only with at least this much of its budget left.
pub const MIN_STEP_PROFILE: Duration = Duration::from_secs(60);

/// The diagnosis of the change in the work tree, for `step` once its verdict is known: the current
/// baseline's heaviest config, profiled as the work tree holds it. `Ok(None)` (with a line on stderr
/// saying why, when something was tried) when ncu is missing, no config is recorded, less than
/// [`MIN_STEP_PROFILE`] is left before `deadline`, or the profile failed: the step goes on without it.
/// Only Ctrl-C is an error ([`process::Interrupted`]), so that the step records nothing.
pub fn cause_for(
    repo: &Repo,
    place: &Place,
    history: &History,
    deadline: Instant,
) -> Result<Option<Profiled>> {
    if place.runner.find("ncu", &repo.root).is_none() {
        return Ok(None);
    }
    let Some(config) = heaviest(&history.current_baseline().configs) else {
        return Ok(None);
    };
    if deadline.saturating_duration_since(Instant::now()) < MIN_STEP_PROFILE {
        place
            .progress
            .line("no diagnosis: the step's budget is nearly spent");
        return Ok(None);
    }
    place
        .progress
        .line(&format!("diagnosing {config} with ncu ..."));
    match profile(
        repo,
        place,
        history,
        repo.root.clone(),
        &config,
        None,
        deadline,
    ) {
        Ok(profiled) => Ok(Some(profiled)),
        Err(err) if err.is::<process::Interrupted>() => Err(err),
        Err(err) => {
            place
                .progress
                .line(&format!("warning: no diagnosis: {}", hint::shown(&err)));
            Ok(None)
        }
    }
}

/// The config with the largest latency: the one that weighs most in the time the kernel takes.
pub fn heaviest(configs: &[Measurement]) -> Option<String> {
    configs
        .iter()
        .max_by(|a, b| a.value.total_cmp(&b.value))
        .map(|m| m.test.clone())
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
pub fn profile(
    repo: &Repo,
    place: &Place,
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
    place.progress.line(&format!(
        "profiling {} of {} with ncu ...",
        names.replace('|', ", "),
        case.node_id
    ));
    let launches = profile_launches(place, &case, &names, save, deadline)?;
    let runner = place.runner;
    let launch = super::representative(&launches).with_context(|| {
        format!(
            "ncu profiled no launch of {} in {}; see {}",
            names.replace('|', ", "),
            case.node_id,
            case.dir.join("ncu.log").display()
        )
    })?;
    let assembler = Assembler::find(runner, &session.python, &case.root, session.gpu.as_deref());
    let compile = toolchain::gather(runner, &case.dumps, assembler.as_ref(), deadline);
    Ok(Profiled {
        config: config.to_string(),
        node_id: case.node_id,
        launches: launches.len(),
        diagnosis: super::diagnose(&Profile::of(launch)),
        compile: (!compile.is_empty()).then_some(compile),
    })
}

/// The launches of the kernels named by `names` (a regex alternation) that ncu profiled in `case`; a
/// metric this ncu does not know is dropped and the case run again, at most
/// [`UNKNOWN_METRIC_RETRIES`] times. With `save`, ncu exports its report there and the launches are
/// read back from it.
fn profile_launches(
    place: &Place,
    case: &Case,
    names: &str,
    save: Option<&Path>,
    deadline: Instant,
) -> Result<Vec<ncu::Launch>> {
    let runner = place.runner;
    let (log, csv) = (case.dir.join("ncu.log"), case.dir.join("ncu.csv"));
    let mut metrics = ncu::select(
        ncu::query_metrics(runner, &case.root).as_deref(),
        &super::wanted(),
    );
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
        let target = ncu::Target {
            runner,
            command: &case.command,
            root: &case.root,
            env: &env,
        };
        let profiled = match save {
            None => ncu::run(&target, &ncu_args, &log, &csv, deadline),
            Some(report) => {
                let exporting = [&ncu_args[..], &export_args(report)].concat();
                let import_log = case.dir.join("ncu-import.log");
                ncu::launch(&target, &exporting, &log, deadline)
                    .and_then(|()| ncu::import(runner, report, &import_log, &csv, deadline))
            }
        };
        let err = match profiled {
            Ok(launches) => return Ok(launches),
            Err(_) if process::interrupted() => {
                return Err(process::Interrupted("nothing was profiled or cached").into());
            }
            Err(err) => err,
        };
        // a metric this ncu does not know stops it before the run: profile without it
        let output = read_all(&[&log, &csv]);
        match super::unknown_metric(&output, &metrics) {
            Some(unknown) if retries > 0 => {
                retries -= 1;
                place.progress.line(&format!(
                    "this ncu does not know {unknown}; profiling without it ..."
                ));
                metrics = super::without(&metrics, &unknown);
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
    match super::known_failure(output) {
        Some((message, hint)) => crate::rules::hint::hinted(
            message,
            format!("{hint} (ncu's output is in {})", dir.display()),
        ),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_config_weighs_most() {
        let measure = |test: &str, value| Measurement {
            pass: "forward".into(),
            test: test.into(),
            value,
            mean: None,
        };
        let configs = [
            measure("small", 0.1),
            measure("large", 1.5),
            measure("mid", 0.7),
        ];
        assert_eq!(heaviest(&configs).as_deref(), Some("large"));
        assert_eq!(heaviest(&[]), None);
    }
}
