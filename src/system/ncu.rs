//! Nsight Compute (`ncu`): profiling kernel launches of a pytest run and reading DRAM traffic, FLOPs
//! and duration from its CSV. The runner goes through `process.rs`; parsing is pure.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::rules::hint::hinted;
use crate::system::process::{self, Ending};
use crate::system::runner::Runner;

const DRAM_BYTES: &str = "dram__bytes.sum";
const DURATION: &str = "gpu__time_duration.sum";
/// Instructions that do two FLOPs per thread (fused multiply-add).
const FMA: [&str; 2] = [
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
];
/// Instructions that do one FLOP per thread.
const SINGLE: [&str; 4] = [
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
];
/// Tensor-core math ops (each multiply and each add counted), by source and accumulator type. Not
/// every GPU has every one: [`available`] keeps those the GPU lists.
const TENSOR: [&str; 5] = [
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16_dst_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8_dst_fp32.sum",
];

/// Every metric this module reads.
fn wanted() -> Vec<&'static str> {
    let mut all = vec![DRAM_BYTES, DURATION];
    all.extend(FMA);
    all.extend(SINGLE);
    all.extend(TENSOR);
    all
}

/// The metrics to collect, comma-separated, for `--metrics`: those whose base counter appears in
/// `ncu --query-metrics` output (an unknown metric makes ncu profile nothing), or all without it.
pub fn metrics(query: Option<&str>) -> String {
    wanted()
        .into_iter()
        .filter(|m| available(query, m))
        .collect::<Vec<_>>()
        .join(",")
}

/// [`metrics`] for another module's set (`diagnose`): `launch__` and `device__` names are attributes
/// of the launch and the GPU, not counters, and are kept without asking the query.
pub fn select(query: Option<&str>, wanted: &[String]) -> String {
    wanted
        .iter()
        .filter(|m| m.starts_with("launch__") || m.starts_with("device__") || available(query, m))
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

fn available(query: Option<&str>, metric: &str) -> bool {
    let base = metric.split('.').next().unwrap_or(metric);
    query.is_none_or(|text| {
        text.lines()
            .any(|l| l.split_whitespace().next() == Some(base))
    })
}

/// `ncu --query-metrics`: the metrics the runner's GPU has, or `None` when ncu cannot say.
pub fn query_metrics(runner: &dyn Runner, dir: &Path) -> Option<String> {
    let output = runner
        .command("ncu", &["--query-metrics"], dir)
        .stdout_capture()
        .stderr_null()
        .unchecked()
        .run()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `ncu`'s own arguments: collect `metrics`, for `count` launches of kernels whose names match `kernel_regex`, after
/// skipping `skip` of them (warm-up), with every value in base units (bytes, nanoseconds), as CSV
/// into `log`.
pub fn args(metrics: String, kernel_regex: &str, skip: u32, count: u32, log: &Path) -> Vec<String> {
    vec![
        "--csv".to_string(),
        "--print-units".to_string(),
        "base".to_string(),
        "--metrics".to_string(),
        metrics,
        "--kernel-name".to_string(),
        format!("regex:{kernel_regex}"),
        "--launch-skip".to_string(),
        skip.to_string(),
        "--launch-count".to_string(),
        count.to_string(),
        "--target-processes".to_string(),
        "all".to_string(),
        "--log-file".to_string(),
        log.display().to_string(),
    ]
}

/// One profiled launch: its kernel's name and each metric's value in base units.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub kernel: String,
    pub metrics: BTreeMap<String, f64>,
}

/// What one launch did, and its arithmetic intensity.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Measured {
    pub kernel: String,
    pub duration_ms: f64,
    pub dram_bytes: f64,
    pub flops: f64,
    /// FLOP per DRAM byte.
    pub intensity: f64,
    pub dram_gb_s: f64,
    pub tflop_s: f64,
}

impl Launch {
    pub fn measured(&self) -> Result<Measured> {
        let get = |name: &str| self.metrics.get(name).copied().unwrap_or(0.0);
        let duration_ns = get(DURATION);
        let dram_bytes = get(DRAM_BYTES);
        if duration_ns <= 0.0 || dram_bytes <= 0.0 {
            return Err(hinted(
                format!(
                    "ncu reported no duration or DRAM traffic for {}",
                    self.kernel
                ),
                "check that ncu may read the GPU's counters (it needs admin rights or \
                 NVreg_RestrictProfilingToAdminUsers=0)",
            ));
        }
        let flops = FMA.iter().map(|m| 2.0 * get(m)).sum::<f64>()
            + SINGLE.iter().map(|m| get(m)).sum::<f64>()
            + TENSOR.iter().map(|m| get(m)).sum::<f64>();
        let seconds = duration_ns * 1e-9;
        Ok(Measured {
            kernel: self.kernel.clone(),
            duration_ms: duration_ns * 1e-6,
            dram_bytes,
            flops,
            intensity: flops / dram_bytes,
            dram_gb_s: dram_bytes / seconds / 1e9,
            tflop_s: flops / seconds / 1e12,
        })
    }
}

/// Reads ncu's `--csv` output (one row per launch and metric; tool messages such as `==PROF==` lines
/// around it are skipped).
pub fn parse_csv(text: &str) -> Result<Vec<Launch>> {
    let table: String = text
        .lines()
        .skip_while(|l| !l.starts_with("\"ID\""))
        .filter(|l| l.starts_with('"'))
        .flat_map(|l| [l, "\n"])
        .collect();
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(table.as_bytes());
    let header = reader
        .headers()
        .context("cannot read ncu's CSV header")?
        .clone();
    if header.is_empty() {
        bail!("no CSV table in ncu's output");
    }
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .with_context(|| format!("ncu's CSV has no {name:?} column"))
    };
    let (id, kernel, metric, value) = (
        column("ID")?,
        column("Kernel Name")?,
        column("Metric Name")?,
        column("Metric Value")?,
    );
    let mut launches: Vec<(String, Launch)> = Vec::new();
    for row in reader.records() {
        let row = row.context("cannot read a row of ncu's CSV")?;
        let (Some(row_id), Some(name), Some(metric), Some(value)) = (
            row.get(id),
            row.get(kernel),
            row.get(metric),
            row.get(value),
        ) else {
            continue;
        };
        // values may carry thousands separators
        let Ok(number) = value.replace(',', "").parse::<f64>() else {
            continue;
        };
        if launches.last().is_none_or(|(last, _)| last != row_id) {
            launches.push((
                row_id.to_string(),
                Launch {
                    kernel: name.to_string(),
                    metrics: BTreeMap::new(),
                },
            ));
        }
        let (_, launch) = launches.last_mut().expect("pushed above");
        launch.metrics.insert(metric.to_string(), number);
    }
    Ok(launches.into_iter().map(|(_, l)| l).collect())
}

/// What ncu profiles: `command` (the words of a program and its arguments) in `root` with `env`, run
/// by `runner` where the session's GPU is.
pub struct Target<'a> {
    pub runner: &'a dyn Runner,
    pub command: &'a [String],
    pub root: &'a Path,
    pub env: &'a [(&'a str, &'a str)],
}

/// Runs `target` under ncu with `ncu_args`, its output in `log`, until it ends or `deadline`; then
/// reads the launches ncu wrote to `csv`.
pub fn run(
    target: &Target,
    ncu_args: &[String],
    log: &Path,
    csv: &Path,
    deadline: Instant,
) -> Result<Vec<Launch>> {
    launch(target, ncu_args, log, deadline)?;
    read(csv, log)
}

/// [`run`] without reading a CSV: for a run that exports a report (`--export`), where ncu writes the
/// report instead of printing its table.
pub fn launch(target: &Target, ncu_args: &[String], log: &Path, deadline: Instant) -> Result<()> {
    let mut args: Vec<&str> = ncu_args.iter().map(String::as_str).collect();
    args.extend(target.command.iter().map(String::as_str));
    let mut expression = target.runner.command("ncu", &args, target.root);
    for (key, value) in target.env {
        expression = expression.env(key, value);
    }
    supervise(expression, log, deadline)
}

/// The launches of a report ncu saved (`--export`), printed as [`run`] reads them into `csv`.
pub fn import(
    runner: &dyn Runner,
    report: &Path,
    log: &Path,
    csv: &Path,
    deadline: Instant,
) -> Result<Vec<Launch>> {
    let (report_arg, csv_arg) = (report.display().to_string(), csv.display().to_string());
    let args = [
        "--import",
        &report_arg,
        "--csv",
        "--print-units",
        "base",
        "--log-file",
        &csv_arg,
    ];
    let dir = report.parent().unwrap_or(Path::new("/"));
    supervise(runner.command("ncu", &args, dir), log, deadline)?;
    read(csv, log)
}

fn supervise(expression: duct::Expression, log: &Path, deadline: Instant) -> Result<()> {
    match process::supervise(expression, log, deadline)? {
        Ending::Exited(_) => Ok(()),
        Ending::Interrupted => bail!("interrupted while profiling"),
        ending => bail!("ncu did not finish ({ending:?}); see {}", log.display()),
    }
}

/// The launches in the CSV ncu wrote to `csv` (its other output is in `log`).
fn read(csv: &Path, log: &Path) -> Result<Vec<Launch>> {
    let text = std::fs::read_to_string(csv).with_context(|| {
        format!(
            "ncu wrote no CSV to {}; see {}",
            csv.display(),
            log.display()
        )
    })?;
    parse_csv(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `ncu --csv --print-units base --metrics ...` output, with made-up numbers.
    const CSV: &str = r#"==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "_rms_kernel" - 0: 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","_rms_kernel","1","7","(128, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum","byte","1,000,000,000"
"0","4242","python3.12","127.0.0.1","_rms_kernel","1","7","(128, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","250000"
"0","4242","python3.12","127.0.0.1","_rms_kernel","1","7","(128, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_thread_inst_executed_op_ffma_pred_on.sum","inst","100000000"
"0","4242","python3.12","127.0.0.1","_rms_kernel","1","7","(128, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","sm__sass_thread_inst_executed_op_fmul_pred_on.sum","inst","300000000"
"0","4242","python3.12","127.0.0.1","_rms_kernel","1","7","(128, 1, 1)","(132, 1, 1)","0","9.0","Command line profiler metrics","sm__ops_path_tensor_src_bf16_dst_fp32.sum","","0"
"1","4242","python3.12","127.0.0.1","_mm<float, 128>, ""tuned""","1","7","(128, 1, 1)","(264, 1, 1)","0","9.0","Command line profiler metrics","dram__bytes.sum","byte","2000"
==PROF== Disconnected from process 4242
"#;

    #[test]
    fn launches_and_their_intensity() {
        let launches = parse_csv(CSV).unwrap();
        assert_eq!(launches.len(), 2);
        // a template argument list's commas stay inside its quoted field
        assert_eq!(launches[1].kernel, "_mm<float, 128>, \"tuned\"");
        let m = launches[0].measured().unwrap();
        assert_eq!(m.kernel, "_rms_kernel");
        assert_eq!(m.flops, 500_000_000.0);
        assert_eq!(m.intensity, 0.5);
        assert!((m.duration_ms - 0.25).abs() < 1e-12);
        assert!((m.dram_gb_s - 4000.0).abs() < 1e-6);
        assert!((m.tflop_s - 2.0).abs() < 1e-9);
        let err = launches[1].measured().unwrap_err().to_string();
        assert!(err.starts_with("ncu reported no duration"), "{err}");
        assert!(parse_csv("==PROF== nothing\n").is_err());
    }

    #[test]
    fn arguments_filter_skip_and_count() {
        let args = args(metrics(None), "_a|_b", 3, 1, Path::new("/tmp/x.csv"));
        let text = args.join(" ");
        assert!(
            text.contains("--kernel-name regex:_a|_b --launch-skip 3 --launch-count 1"),
            "{text}"
        );
        assert!(text.ends_with("--log-file /tmp/x.csv"), "{text}");
        assert!(
            text.contains("--metrics dram__bytes.sum,gpu__time_duration.sum,"),
            "{text}"
        );
        assert!(
            text.contains("sm__ops_path_tensor_src_fp8_dst_fp32.sum"),
            "{text}"
        );
    }

    #[test]
    fn metrics_the_gpu_lacks_are_left_out() {
        let query = "Device NVIDIA H200 (GH100)\n------\nMetric Name   Metric Type   Metric Unit   Metric Description\n\
            dram__bytes   Counter   byte   # of bytes accessed in DRAM\n\
            gpu__time_duration   Counter   nsecond   total duration\n\
            sm__ops_path_tensor_src_bf16_dst_fp32   Counter   # of math ops\n";
        assert_eq!(
            metrics(Some(query)),
            "dram__bytes.sum,gpu__time_duration.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum"
        );
    }
}
