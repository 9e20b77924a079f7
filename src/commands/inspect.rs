//! `inspect`: what setup must know about a kernel, read from its source: kernels, launch wrappers,
//! registrations, autotune spaces (with the branch this GPU takes), allowed paths, test file, class.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::InspectArgs;
use crate::diagnose::case;
use crate::git::Repo;
use crate::gpu::GpuState;
use crate::inspect::module::{ConfigGenerator, KernelDef, Launch, Opt, TuningCall};
use crate::inspect::{self, ClassEstimate, Located, RegistrationReport, Report};
use crate::kernel_class::KernelClass;
use crate::locate::{self, Kernel, TestMatch};
use crate::ncu::{self, Measured};
use crate::peaks::{self, Peak};
use crate::{gpu, kernel_class, pytest, ui};

#[derive(Serialize)]
struct InspectReport {
    #[serde(flatten)]
    report: Report,
    /// The test file found, and the rule that found it; `null` when none did.
    test: Option<TestMatch>,
    /// Why no test file was found, when none was.
    test_error: Option<String>,
    /// What Nsight Compute measured (`--measure`).
    measured: Option<Measurement>,
}

/// One profiled launch, against the GPU's peaks when the table knows the GPU.
#[derive(Serialize)]
struct Measurement {
    #[serde(flatten)]
    launch: Measured,
    gpu: Option<String>,
    peak: Option<&'static Peak>,
    dram_pct_of_peak: Option<f64>,
    flop_pct_of_peak: Option<f64>,
}

pub fn run(repo: &Repo, args: &InspectArgs, out: &mut impl Write) -> Result<()> {
    locate::check_tilegym(&repo.root)?;
    let kernel = locate::kernel(&repo.root, &args.kernel, args.suite.as_deref())?;
    let capability = match &args.capability {
        Some(text) => Some(parse_capability(text)?),
        None => gpu::detect().as_ref().and_then(capability_of),
    };
    let mut full = inspect_with_test(&repo.root, &kernel, capability)?;
    if args.measure {
        let measurement = measure(repo, &full, args)?;
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
            ui::progress_line(&format!(
                "ncu counted no DRAM bytes or no FLOP for {}; the class stays the static estimate",
                measurement.launch.kernel
            ));
        }
        full.measured = Some(measurement);
    }
    if args.output.json {
        return ui::write_json(out, &full);
    }
    write!(out, "{}", render(&full))?;
    Ok(())
}

/// What `start` reads from the kernel before its baseline, printed to stderr as the plan.
pub struct Plan {
    /// `None` when the kernel's source could not be inspected (a syntax error): `start` goes on with the
    /// kernel file alone and no class.
    pub report: Option<Report>,
    pub test: Result<TestMatch, String>,
}

impl Plan {
    pub fn allowed_paths(&self, kernel: &Kernel) -> Vec<String> {
        match &self.report {
            Some(report) => report
                .allowed_paths
                .iter()
                .map(|p| p.path.clone())
                .collect(),
            None => vec![kernel.path.clone()],
        }
    }

    pub fn class(&self) -> Option<KernelClass> {
        self.report.as_ref()?.class.as_ref().map(|c| c.class)
    }
}

/// Inspects the kernel and finds its test, for `start`; `gpu` picks the autotune branches.
pub fn plan(root: &Path, kernel: &Kernel, gpu: Option<&GpuState>) -> Plan {
    match inspect_with_test(root, kernel, gpu.and_then(capability_of)) {
        Ok(full) => {
            ui::progress_line(&format!(
                "plan (read from the source by `inspect`):\n{}",
                render(&full)
            ));
            let test = match (full.test, full.test_error) {
                (Some(found), _) => Ok(found),
                (None, why) => Err(why.unwrap_or_default()),
            };
            Plan {
                report: Some(full.report),
                test,
            }
        }
        Err(err) => {
            ui::progress_line(&format!(
                "warning: could not inspect {}: {err:#}\nthe allowed paths are the kernel file and --allow; pass --class",
                kernel.path
            ));
            Plan {
                report: None,
                test: locate::find_test(root, kernel, &[]).map_err(|e| format!("{e:#}")),
            }
        }
    }
}

/// The inspection and the test file it leads to (or why none was found).
fn inspect_with_test(
    root: &Path,
    kernel: &Kernel,
    capability: Option<(u32, u32)>,
) -> Result<InspectReport> {
    let report = inspect::inspect(root, kernel, capability)?;
    let (test, test_error) = match locate::find_test(root, kernel, &registered_ops(&report)) {
        Ok(found) => (Some(found), None),
        Err(err) => (None, Some(format!("{err:#}"))),
    };
    Ok(InspectReport {
        report,
        test,
        test_error,
        measured: None,
    })
}

fn registered_ops(report: &Report) -> Vec<String> {
    report
        .registrations
        .iter()
        .map(|r| r.registration.op.clone())
        .collect()
}

/// Profiles one launch of the kernel's functions in the first perf case of its test, after a warm-up,
/// with TileGym's autotuning off so that no tuning trial is measured.
fn measure(repo: &Repo, full: &InspectReport, args: &InspectArgs) -> Result<Measurement> {
    const WARM_UP_LAUNCHES: u32 = 3;
    which::which("ncu").context(
        "--measure needs Nsight Compute, and ncu is not on PATH\nhint: install Nsight Compute, or drop --measure for the static estimate",
    )?;
    let (test, names) = what_to_profile(full)?;
    let mut command = perf_case_command(args, test)?;
    let (log, csv) = ncu_outputs(repo)?;
    // autotune searches that ignore TILEGYM_DISABLE_AUTOTUNE are paused under the profiler, as in
    // `diagnose`: their trial launches carry the kernel's name and fail under ncu
    let plugin_dir = log.parent().expect("the log is in the sandbox");
    command.extend(case::write_plugin(plugin_dir, case::PAUSE_TUNING)?);
    let inherited = pytest::sources_first(&repo.root)?
        .or_else(|| std::env::var_os("PYTHONPATH"))
        .unwrap_or_default();
    let python_path = std::env::join_paths(
        std::env::split_paths(&inherited)
            .filter(|dir| !dir.as_os_str().is_empty())
            .chain([plugin_dir.to_path_buf()]),
    )?;
    let bytecode = pytest::FreshBytecode::new()?;
    let [no_write, prefix] = bytecode.env();
    let metrics = ncu::metrics(ncu::query_metrics().as_deref());
    let ncu_args = ncu::args(metrics, &names.join("|"), WARM_UP_LAUNCHES, 1, &csv);
    ui::progress_line(&format!(
        "profiling one launch of {} with ncu ...",
        names.join(", ")
    ));
    let launches = ncu::run(
        &command,
        &ncu_args,
        &repo.root,
        &[
            ("TILEGYM_DISABLE_AUTOTUNE", "1"),
            (no_write.0, &no_write.1),
            (prefix.0, &prefix.1),
            ("PYTHONPATH", &python_path.to_string_lossy()),
        ],
        &log,
        &csv,
        Instant::now() + args.budget,
    )?;
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
    Ok(against_peaks(launch))
}

/// The kernel's test, and the names of the kernels to profile in it.
fn what_to_profile(full: &InspectReport) -> Result<(&TestMatch, Vec<&str>)> {
    let Some(test) = &full.test else {
        bail!(
            "--measure needs the kernel's test, and none was found\nhint: {}",
            full.test_error.as_deref().unwrap_or_default()
        );
    };
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
fn perf_case_command(args: &InspectArgs, test: &TestMatch) -> Result<Vec<String>> {
    let python = args
        .python
        .clone()
        .unwrap_or_else(super::start::default_python);
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
    repo.exclude(&format!("/{}/", crate::guard::SANDBOX))?;
    let sandbox = super::sandbox(repo);
    std::fs::create_dir_all(&sandbox)
        .with_context(|| format!("cannot create {}", sandbox.display()))?;
    let (log, csv) = (sandbox.join("ncu.log"), sandbox.join("ncu.csv"));
    // a CSV left by an earlier run must never be read as this one's
    std::fs::remove_file(&csv).ok();
    Ok((log, csv))
}

/// The launch against this GPU's peaks, when the table knows the GPU.
fn against_peaks(launch: Measured) -> Measurement {
    let gpu = gpu::detect().map(|state| state.gpu.identity());
    let peak = gpu.as_deref().and_then(peaks::lookup);
    Measurement {
        dram_pct_of_peak: peak.map(|p| launch.dram_gb_s / p.dram_gb_s * 100.0),
        flop_pct_of_peak: peak.map(|p| launch.tflop_s / p.bf16_dense_tflop_s * 100.0),
        launch,
        gpu,
        peak,
    }
}

/// `9.0` or `12.1`.
pub fn parse_capability(text: &str) -> Result<(u32, u32)> {
    let parsed = text
        .split_once('.')
        .and_then(|(major, minor)| Some((major.trim().parse().ok()?, minor.trim().parse().ok()?)));
    match parsed {
        Some(capability) => Ok(capability),
        None => bail!(
            "invalid compute capability {text:?}\nhint: write it as MAJOR.MINOR, e.g. 9.0 for an H100/H200"
        ),
    }
}

/// The GPU's compute capability as (major, minor).
fn capability_of(state: &GpuState) -> Option<(u32, u32)> {
    parse_capability(&state.gpu.compute_capability).ok()
}

fn render(full: &InspectReport) -> String {
    let r = &full.report;
    let mut lines = vec![
        format!("{} ({}): {}", ui::bold(&r.kernel), r.suite, r.file),
        test_line(full),
        class_line(r.class.as_ref()),
    ];
    lines.extend(full.measured.as_ref().map(measured_line));
    lines.extend(kernel_lines(&r.kernels));
    lines.extend(launch_lines(&r.launches));
    lines.extend(registration_lines(&r.registrations));
    lines.extend(tuning_lines(&r.tunings));
    for generator in &r.generators {
        lines.extend(generator_lines(generator, r.capability.as_deref()));
    }
    lines.push("allowed paths:".to_string());
    for path in &r.allowed_paths {
        lines.push(format!("  {}  ({})", path.path, path.reason));
    }
    lines.iter().map(|line| format!("{line}\n")).collect()
}

fn test_line(full: &InspectReport) -> String {
    match &full.test {
        Some(test) => format!("test: {} ({})", test.path, test.rule),
        None => format!(
            "test: none found: {}",
            full.test_error.as_deref().unwrap_or_default()
        ),
    }
}

fn class_line(class: Option<&ClassEstimate>) -> String {
    match class {
        Some(class) => format!(
            "class: {} ({} estimate: {})",
            class.class, class.source, class.reason
        ),
        None => "class: unknown (no kernels found); pass --class or --intensity".to_string(),
    }
}

fn measured_line(m: &Measurement) -> String {
    let pct = |value: Option<f64>| value.map_or("?".to_string(), |v| format!("{v:.0}%"));
    format!(
        "measured: {} {:.3} ms, {:.0} GB/s DRAM ({} of peak), {:.1} TFLOP/s ({} of dense BF16 peak) on {}",
        m.launch.kernel,
        m.launch.duration_ms,
        m.launch.dram_gb_s,
        pct(m.dram_pct_of_peak),
        m.launch.tflop_s,
        pct(m.flop_pct_of_peak),
        m.gpu.as_deref().unwrap_or("an unknown GPU")
    )
}

fn kernel_lines(kernels: &[Located<KernelDef>]) -> Vec<String> {
    let mut lines = vec![format!("kernels ({}):", kernels.len())];
    for k in kernels {
        let options: Vec<String> = k.item.options.iter().map(Opt::to_string).collect();
        let mma = if k.item.mma { "  [mma]" } else { "" };
        let line = format!(
            "  {}:{}  {}  {}{mma}",
            k.file,
            k.item.line,
            k.item.name,
            options.join(", ")
        );
        lines.push(line.trim_end().to_string());
    }
    lines
}

fn launch_lines(launches: &[Located<Launch>]) -> Vec<String> {
    let mut lines = vec![format!("launches ({}):", launches.len())];
    for l in launches {
        let kernels = if l.item.kernels.is_empty() {
            "?".to_string()
        } else {
            l.item.kernels.join(" | ")
        };
        let grid = match &l.item.grid_value {
            Some(value) => format!("{} = {value}", l.item.grid),
            None => l.item.grid.clone(),
        };
        lines.push(format!(
            "  {}:{}  in {}: {} -> {kernels}  grid {grid}",
            l.file, l.item.line, l.item.wrapper, l.item.kernel_expr
        ));
    }
    lines
}

fn registration_lines(registrations: &[RegistrationReport]) -> Vec<String> {
    let mut lines = vec![format!("registrations ({}):", registrations.len())];
    for reg in registrations {
        let g = &reg.registration;
        lines.push(format!(
            "  {}:{}  {:?} backend={} -> {}",
            reg.file,
            g.line,
            g.op,
            g.backend.as_deref().unwrap_or("?"),
            g.function
        ));
        for wrapper in &reg.wrappers {
            lines.push(format!("      reaches {wrapper}"));
        }
    }
    lines
}

fn tuning_lines(tunings: &[Located<TuningCall>]) -> Vec<String> {
    let mut lines = vec![format!("tuning calls ({}):", tunings.len())];
    for t in tunings {
        lines.push(format!(
            "  {}:{}  in {}: space {} (generators: {}) kernels: {}",
            t.file,
            t.item.line,
            t.item.function,
            t.item.space,
            t.item.generators.join(", "),
            t.item.kernels.join(" | ")
        ));
    }
    lines
}

/// A config generator: each GPU-architecture branch with how many configs it yields (and whether
/// `capability` takes it), then the configs built outside any branch.
fn generator_lines(g: &Located<ConfigGenerator>, capability: Option<&str>) -> Vec<String> {
    let mut lines = vec![format!(
        "  config generator {} at {}:{}; fields: {}",
        g.item.name,
        g.file,
        g.item.line,
        g.item.fields.join(", ")
    )];
    for (index, branch) in g.item.branches.iter().enumerate() {
        let taken = match branch.taken {
            Some(true) => format!("  <- taken on {}", capability.unwrap_or("?")),
            Some(false) => String::new(),
            None => "  (unknown)".to_string(),
        };
        let count: u64 = g
            .item
            .configs
            .iter()
            .filter(|c| c.branch == Some(index))
            .map(|c| c.count.unwrap_or(1))
            .sum();
        lines.push(format!(
            "    line {}: {}: {count} config(s){taken}",
            branch.line, branch.condition
        ));
    }
    for config in g.item.configs.iter().filter(|c| c.branch.is_none()) {
        lines.push(format!("    line {}: {}", config.line, config.fields));
    }
    lines
}
