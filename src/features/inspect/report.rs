//! What `inspect` shows of a kernel and `start` reads as its plan: the inspection with the test file it
//! leads to, and its text.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::module::{ConfigGenerator, KernelDef, Launch, Opt, TuningCall};
use super::source::{self, Source};
use super::{ClassEstimate, Located, RegistrationReport, Report};
use crate::features::locate::{self, Kernel, TestMatch};
use crate::rules::hint::Hinted;
use crate::rules::kernel_class::KernelClass;
use crate::rules::peaks::Peak;
use crate::rules::units::counted;
use crate::system::gpu::{self, GpuState};
use crate::system::ncu::Measured;
use crate::system::ui::{self, Progress};

#[derive(Serialize)]
pub struct InspectReport {
    #[serde(flatten)]
    pub report: Report,
    /// The test file found, and the rule that found it; `null` when none did.
    pub test: Option<TestMatch>,
    /// Why no test file was found, when none was, and what to do.
    pub test_error: Option<Hinted>,
    /// How the kernel will be measured, read before anything runs.
    pub source: Source,
    /// What times it, as `inspect --all` names it: `test_perf`, `session_perf_file`, `benchmark`,
    /// `correctness_only` or `no_test`.
    pub measured_by: &'static str,
    /// What Nsight Compute measured (`--measure`).
    pub measured: Option<Measurement>,
}

/// One profiled launch, against the GPU's peaks when the table knows the GPU.
#[derive(Serialize)]
pub struct Measurement {
    #[serde(flatten)]
    pub launch: Measured,
    pub gpu: Option<String>,
    pub peak: Option<&'static Peak>,
    pub dram_pct_of_peak: Option<f64>,
    pub flop_pct_of_peak: Option<f64>,
}

/// What `start` reads from the kernel before its baseline, printed to stderr as the plan.
pub struct Plan {
    /// `None` when the kernel's source could not be inspected (a syntax error): `start` goes on with the
    /// kernel file alone and no class.
    pub report: Option<Report>,
    pub test: Result<TestMatch, Hinted>,
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
pub fn plan(root: &Path, kernel: &Kernel, gpu: Option<&GpuState>, progress: &Progress) -> Plan {
    match inspect_with_test(root, kernel, gpu.and_then(gpu::capability_of)) {
        Ok(full) => {
            // the test's hint waits for start's own refusal: start may go on with a session perf file
            progress.line(&format!(
                "plan (read from the source by `inspect`):\n{}",
                render_lines(&full, false)
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
            progress.line(&format!(
                "warning: could not inspect {}: {}\nthe allowed paths are the kernel file and --allow; pass --class",
                kernel.path,
                crate::rules::hint::shown(&err)
            ));
            Plan {
                report: None,
                test: locate::find_test(root, kernel, &[]).map_err(|e| Hinted::of(&e)),
            }
        }
    }
}

/// The inspection and the test file it leads to (or why none was found).
pub fn inspect_with_test(
    root: &Path,
    kernel: &Kernel,
    capability: Option<(u32, u32)>,
) -> Result<InspectReport> {
    let report = super::inspect(root, kernel, capability)?;
    let (test, test_error) = match locate::find_test(root, kernel, &registered_ops(&report)) {
        Ok(found) => (Some(found), None),
        Err(err) => (None, Some(Hinted::of(&err))),
    };
    let source = source::find(root, kernel, test.as_ref().map(|t| t.path.as_str()));
    Ok(InspectReport {
        report,
        measured_by: source.kind(test.is_some()),
        test,
        test_error,
        source,
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

pub fn render(full: &InspectReport) -> String {
    render_lines(full, true)
}

/// The report in text, with the hint of a test not found when `test_hint`.
fn render_lines(full: &InspectReport, test_hint: bool) -> String {
    let r = &full.report;
    let mut lines = vec![
        format!("{} ({}): {}", ui::bold(&r.kernel), r.suite, r.file),
        // a benchmark-only kernel starts without a test: no hint to name one
        test_line(
            full,
            test_hint && !matches!(full.source, Source::Benchmark { .. }),
        ),
        measured_by_line(full),
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

fn test_line(full: &InspectReport, with_hint: bool) -> String {
    let why = |why: &Hinted| match with_hint {
        true => why.shown(),
        false => why.message.clone(),
    };
    match &full.test {
        Some(test) => format!("test: {} ({})", test.path, test.rule),
        None => format!(
            "test: none found: {}",
            full.test_error.as_ref().map(why).unwrap_or_default()
        ),
    }
}

fn measured_by_line(full: &InspectReport) -> String {
    let r = &full.report;
    match (&full.source, &full.test) {
        (Source::None, Some(_)) => format!(
            "measured by: nothing, as its tests check correctness only: `git cutile-perf start {} --suite \
             {} --scaffold` writes a perf file to time it",
            r.kernel, r.suite
        ),
        (Source::None, None) => "measured by: nothing, as no test or benchmark runs it".to_string(),
        (source, _) => format!("measured by: {}", source.describe()),
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
            "    line {}: {}: {}{taken}",
            branch.line,
            branch.condition,
            counted(count, "config")
        ));
    }
    for config in g.item.configs.iter().filter(|c| c.branch.is_none()) {
        lines.push(format!("    line {}: {}", config.line, config.fields));
    }
    lines
}
