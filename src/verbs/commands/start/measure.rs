//! The class measured at `start`, when Nsight Compute is on PATH, a GPU is there and neither `--class`
//! nor `--intensity` was given: one launch of the baseline's heaviest config is profiled (after its
//! warm-up, with autotune searches paused, as `diagnose` does) and its FLOP per DRAM byte classifies the
//! kernel. It never stops the session: without a measurement the static estimate stays, with a warning;
//! a launch where ncu counted no FLOP at all is no measurement (its counters missed the math).

use std::time::Instant;

use anyhow::{Context, Result};

use crate::features::diagnose::case::Place;
use crate::features::diagnose::case::{self, Case};
use crate::features::diagnose::profile::{WARM_UP_LAUNCHES, heaviest};
use crate::record::session::Session;
use crate::rules::hint;
use crate::rules::kernel_class::{self, KernelClass};
use crate::rules::records::Measurement;
use crate::system::git::Repo;
use crate::system::ncu::{self, Measured};

/// The measured class and its source line, or `None` (no ncu, or a failed profile, said as a warning).
pub fn measured_class(
    repo: &Repo,
    place: &Place,
    session: &Session,
    configs: &[Measurement],
    deadline: Instant,
) -> Option<(KernelClass, String)> {
    place.runner.find("ncu", &repo.root)?;
    let config = heaviest(configs)?;
    match profile(repo, place, session, &config, deadline) {
        // no FLOP counted is a metric set that misses this kernel's math (on the H200, ncu's tensor-core
        // op counters stay at 0 for matmul), not a kernel without math: the measurement cannot classify it
        Ok(m) if m.flops == 0.0 || !m.intensity.is_finite() => {
            place.progress.line(&format!(
                "warning: ncu counted {} FLOP and {} DRAM bytes in {}, which cannot classify it; the class \
                 stays the static estimate",
                m.flops, m.dram_bytes, m.kernel
            ));
            None
        }
        Ok(m) => Some((
            kernel_class::classify(m.intensity),
            format!(
                "measured: {:.2} FLOP per DRAM byte, {:.0} GB/s, {:.2} TFLOP/s in {} ({config})",
                m.intensity, m.dram_gb_s, m.tflop_s, m.kernel
            ),
        )),
        Err(e) => {
            place.progress.line(&format!(
                "warning: could not measure the class with ncu ({}); it stays the static estimate",
                hint::shown(&e)
            ));
            None
        }
    }
}

fn profile(
    repo: &Repo,
    place: &Place,
    session: &Session,
    config: &str,
    deadline: Instant,
) -> Result<Measured> {
    let runner = place.runner;
    let names = case::kernel_names(session, &repo.root)?.join("|");
    let case = Case::prepare(repo, session, repo.root.clone(), config, "class")?
        .with_plugin(case::PAUSE_TUNING)?;
    let (log, csv) = (case.dir.join("ncu.log"), case.dir.join("ncu.csv"));
    let metrics = ncu::metrics(ncu::query_metrics(runner, &case.root).as_deref());
    let args = ncu::args(metrics, &names, WARM_UP_LAUNCHES, 1, &csv);
    place.progress.line(&format!(
        "measuring the class: one launch of {} in {} under ncu ...",
        names.replace('|', ", "),
        case.node_id
    ));
    let env = case.env();
    let target = ncu::Target {
        runner,
        command: &case.command,
        root: &case.root,
        env: &env,
    };
    let launches = ncu::run(&target, &args, &log, &csv, deadline)?;
    launches
        .first()
        .with_context(|| format!("ncu profiled no launch; see {}", log.display()))?
        .measured()
}
