//! `inspect`: what setup must know about a kernel, read from its source: kernels, launch wrappers,
//! registrations, autotune spaces (with the branch this GPU takes), allowed paths, test file, class.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::features::diagnose::case;
use crate::features::inspect::ClassEstimate;
use crate::features::inspect::coverage::{Coverage, coverage};
use crate::features::inspect::report::{InspectReport, Measurement, inspect_with_test, render};
use crate::features::locate::{self, TestMatch};
use crate::rules::hint::Hinted;
use crate::rules::peaks;
use crate::system::git::Repo;
use crate::system::gpu::{capability_of, parse_capability};
use crate::system::ncu::{self, Measured};
use crate::system::runner::{Local, Runner};
use crate::system::ui::{Render, Ui};
use crate::{rules::kernel_class, system::pytest};

/// What `inspect` is asked: one kernel, or the coverage table of every kernel file.
#[derive(Debug)]
pub enum Inspect {
    One(InspectOptions),
    All,
}

/// The coverage table of the checkout: every kernel file, its test and its source.
pub fn all(repo: &Repo) -> Result<Coverage> {
    locate::check_tilegym(&repo.root)?;
    Ok(coverage(&repo.root))
}

impl Render for Coverage {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        write!(
            ui.out(),
            "{}",
            crate::features::inspect::coverage::render(self)
        )?;
        Ok(())
    }
}

/// Which kernel to inspect, and whether to measure its class.
#[derive(Debug)]
pub struct InspectOptions {
    pub kernel: String,
    /// The suite the kernel is in, when its name is in several.
    pub suite: Option<String>,
    /// The compute capability whose autotune branches to show; default: the GPU's.
    pub capability: Option<String>,
    /// Measure the class with Nsight Compute.
    pub measure: bool,
    /// The Python command that runs pytest for the measurement.
    pub python: Option<String>,
    /// Time limit for the measurement.
    pub budget: Duration,
}

pub fn run(ui: &mut Ui, repo: &Repo, args: &InspectOptions) -> Result<InspectReport> {
    locate::check_tilegym(&repo.root)?;
    let kernel = locate::kernel(&repo.root, &args.kernel, args.suite.as_deref())?;
    let capability = match &args.capability {
        Some(text) => Some(parse_capability(text)?),
        None => Local.gpu(&repo.root).as_ref().and_then(capability_of),
    };
    let mut full = inspect_with_test(&repo.root, &kernel, capability)?;
    // a kernel with no test that a standalone benchmark times is measured (and checked) by it
    if full.test.is_none() && full.source == crate::features::inspect::source::Source::None {
        let why = full.test_error.clone().unwrap_or_default();
        return Err(Hinted {
            message: format!("{} has no test, so nothing can check or time it: {}", kernel.name, why.message),
            hint: Some(format!(
                "name its test with `git cutile-perf start {} --suite {} --test PATH`; `inspect --all` lists \
                 what every kernel has",
                kernel.name, kernel.suite
            )),
        }
        .into());
    }
    if args.measure {
        let measurement = measure(ui, repo, &full, args)?;
        let intensity = measurement.launch.intensity;
        // no FLOP counted is a metric set that missed the math (matmul's tensor ops on the H200)
        if intensity.is_finite() && measurement.launch.flops > 0.0 {
            full.report.class = Some(ClassEstimate {
                class: kernel_class::classify(intensity),
                source: "measured",
                reason: format!(
                    "ncu on one launch of {}: {intensity:.1} FLOP per DRAM byte",
                    measurement.launch.kernel
                ),
            });
        } else {
            ui.progress(&format!(
                "ncu counted no DRAM bytes or no FLOP for {}; the class stays the static estimate",
                measurement.launch.kernel
            ));
        }
        full.measured = Some(measurement);
    }
    Ok(full)
}

impl Render for InspectReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        write!(ui.out(), "{}", render(self))?;
        Ok(())
    }
}

/// Profiles one launch of the kernel's functions in the first perf case of its test, after a warm-up,
/// with TileGym's autotuning off so that no tuning trial is measured.
fn measure(
    ui: &mut Ui,
    repo: &Repo,
    full: &InspectReport,
    args: &InspectOptions,
) -> Result<Measurement> {
    const WARM_UP_LAUNCHES: u32 = 3;
    Local.find("ncu", &repo.root).context(Hinted::new(
        "--measure needs Nsight Compute, and ncu is not on PATH",
        "install Nsight Compute, or drop --measure for the static estimate",
    ))?;
    let (test, names) = what_to_profile(full)?;
    let mut command = perf_case_command(args, test)?;
    let (log, csv) = ncu_outputs(repo)?;
    // autotune searches that ignore TILEGYM_DISABLE_AUTOTUNE are paused under the profiler, as in
    // `diagnose`: their trial launches carry the kernel's name and fail under ncu
    let plugin_dir = log.parent().expect("the log is in the sandbox");
    command.extend(pytest::write_plugin(plugin_dir, case::PAUSE_TUNING)?);
    let inherited = pytest::sources_first(&repo.root)?
        .or_else(|| std::env::var_os("PYTHONPATH"))
        .unwrap_or_default();
    let python_path = std::env::join_paths(
        std::env::split_paths(&inherited)
            .filter(|dir| !dir.as_os_str().is_empty())
            .chain([plugin_dir.to_path_buf()]),
    )?;
    let bytecode = pytest::Bytecode::for_tree(&repo.root)?;
    let [no_write, prefix] = bytecode.env();
    let metrics = ncu::metrics(ncu::query_metrics(&Local, &repo.root).as_deref());
    let ncu_args = ncu::args(metrics, &names.join("|"), WARM_UP_LAUNCHES, 1, &csv);
    ui.progress(&format!(
        "profiling one launch of {} with ncu ...",
        names.join(", ")
    ));
    let python_path = python_path.to_string_lossy();
    let target = ncu::Target {
        runner: &Local,
        command: &command,
        root: &repo.root,
        env: &[
            ("TILEGYM_DISABLE_AUTOTUNE", "1"),
            (no_write.0, &no_write.1),
            (prefix.0, &prefix.1),
            ("PYTHONPATH", &python_path),
        ],
    };
    let launches = ncu::run(&target, &ncu_args, &log, &csv, Instant::now() + args.budget)?;
    let launch = launches
        .first()
        .with_context(|| {
            format!(
                "ncu profiled no launch of {}; see {}",
                names.join(", "),
                log.display()
            )
        })?
        .measured()?;
    Ok(against_peaks(launch, &repo.root))
}

/// The kernel's test (`run` refused a kernel without one), and the names of the kernels to profile in it.
fn what_to_profile(full: &InspectReport) -> Result<(&TestMatch, Vec<&str>)> {
    let test = full.test.as_ref().context("the kernel has no test")?;
    let names: Vec<&str> = full
        .report
        .kernels
        .iter()
        .map(|k| k.item.name.as_str())
        .collect();
    if names.is_empty() {
        bail!("{} defines no @ct.kernel to profile", full.report.file);
    }
    Ok((test, names))
}

/// pytest on the perf cases of `test`, with the session's Python.
fn perf_case_command(args: &InspectOptions, test: &TestMatch) -> Result<Vec<String>> {
    let python = args
        .python
        .clone()
        .unwrap_or_else(|| pytest::default_python(&Local, std::path::Path::new(".")));
    let mut command = pytest::python_words(&python)?;
    command.extend(
        [
            "-m",
            "pytest",
            &test.path,
            "-k",
            pytest::BENCHMARK_SELECTION,
            "-q",
            "-p",
            "no:cacheprovider",
        ]
        .map(str::to_string),
    );
    Ok(command)
}

/// Where ncu writes its log and its CSV, in the sandbox (which git ignores); no CSV of an earlier
/// run is left there.
fn ncu_outputs(repo: &Repo) -> Result<(PathBuf, PathBuf)> {
    let sandbox = crate::record::history::made_sandbox(repo)?;
    let (log, csv) = (sandbox.join("ncu.log"), sandbox.join("ncu.csv"));
    // a CSV left by an earlier run must never be read as this one's
    std::fs::remove_file(&csv).ok();
    Ok((log, csv))
}

/// The launch against this GPU's peaks, when the table knows the GPU.
fn against_peaks(launch: Measured, root: &std::path::Path) -> Measurement {
    let gpu = Local.gpu(root).map(|state| state.gpu.identity());
    let peak = gpu.as_deref().and_then(peaks::lookup);
    Measurement {
        dram_pct_of_peak: peak.map(|p| launch.dram_gb_s / p.dram_gb_s * 100.0),
        flop_pct_of_peak: peak.map(|p| launch.tflop_s / p.bf16_dense_tflop_s * 100.0),
        launch,
        gpu,
        peak,
    }
}
