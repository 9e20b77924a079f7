//! Why a kernel is slow: a small fixed set of Nsight Compute metrics, read from `ncu --csv`, and the
//! bottleneck they point at, named by explicit rules with the numbers that decided it. Pure: the verb
//! is `commands::diagnose`, the CSV reader `ncu::parse_csv`; the submodules `case` (the one pytest case
//! of a config), `profile` (that case under ncu), `cache` (the diagnoses kept as git notes),
//! `toolchain` (the compiler's tools, whose texts `crate::rules::compile` reads) and `facts` (an iteration's
//! compile facts for `step`'s evidence) hold the rest.
//!
//! # The rules, in order (the first that applies names the cause)
//!
//! | rule | when | cause |
//! |---|---|---|
//! | `no-throughput` | ncu reported no SM or no memory throughput | unknown |
//! | `memory-bound` | memory throughput (the larger of DRAM and the memory units' speed of light) >= 60% of peak and >= SM throughput | memory |
//! | `compute-bound` | SM throughput >= 60% of peak and above memory throughput | compute |
//! | `small-grid` | both < 60%, and the grid has fewer blocks than the GPU has SMs (or, with no grid size, under one wave per SM) | scheduling |
//! | `imbalance` | both < 60%, and achieved occupancy is under half the theoretical occupancy | scheduling |
//! | `latency` | both < 60% otherwise | latency |
//!
//! Sources (Nsight Compute's Kernel Profiling Guide and the rules its sections ship with, in our
//! words):
//! - Speed of Light: SM and memory throughput are each reported as a percentage of the GPU's
//!   theoretical peak; the section's rule treats a unit above 60% of peak as well used, and a kernel with
//!   both compute and memory under 60% as likely limited by latency rather than throughput. The larger of
//!   the two tells which resource limits the kernel (`memory-bound`, `compute-bound`, `latency`).
//! - Launch Statistics: a grid with fewer blocks than the device has multiprocessors leaves SMs idle,
//!   and "waves per SM" counts how many full rounds of blocks the launch needs; under one wave the GPU
//!   is never filled (`small-grid`).
//! - Occupancy: achieved occupancy well below the theoretical one is attributed by the guide to warp
//!   scheduling overheads or workload imbalance between blocks and SMs (`imbalance`; the factor of one
//!   half is our threshold).
//! - Warp State Statistics: the average number of cycles a warp spends stalled per issued
//!   instruction, by reason (long scoreboard = waiting on L1TEX/global memory, barrier, math pipe
//!   throttle, ...); the largest reasons are reported beside every verdict as evidence, not used to
//!   pick it.
//! - Registers per thread and local-memory traffic (register spills go to local memory, which lives
//!   in device memory) and tensor-pipe utilisation are reported as evidence too.

pub mod cache;
pub mod case;
pub mod facts;
pub mod profile;
pub mod toolchain;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::rules::decision::Cause;
use crate::system::ncu::Launch;

/// A unit at or above this share of its peak is the limit (Speed of Light rule).
pub const THROUGHPUT_LIMIT_PCT: f64 = 60.0;
/// Achieved occupancy under this fraction of the theoretical one counts as imbalance.
pub const OCCUPANCY_RATIO: f64 = 0.5;
/// How many stall reasons a diagnosis lists.
const TOP_STALLS: usize = 3;

const DURATION: &str = "gpu__time_duration.sum";
const SM_PCT: &str = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
const DRAM_PCT: &str = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
const MEMORY_PCT: &str = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
const ACHIEVED_OCCUPANCY: &str = "sm__warps_active.avg.pct_of_peak_sustained_active";
const THEORETICAL_OCCUPANCY: &str = "sm__maximum_warps_per_active_cycle_pct";
const REGISTERS: &str = "launch__registers_per_thread";
const WAVES: &str = "launch__waves_per_multiprocessor";
const GRID: &str = "launch__grid_size";
const SMS: &str = "device__attribute_multiprocessor_count";
const LOCAL_LOAD_BYTES: &str = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum";
const LOCAL_STORE_BYTES: &str = "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum";
/// Tensor-pipe activity: `hmma` (mma.sync) and, on Hopper, `gmma` (warpgroup MMA); the larger counts.
const TENSOR_PIPES: [&str; 2] = [
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
];
const STALL_PREFIX: &str = "smsp__average_warps_issue_stalled_";
const STALL_SUFFIX: &str = "_per_issue_active.ratio";
const STALL_REASONS: [&str; 14] = [
    "long_scoreboard",
    "short_scoreboard",
    "mio_throttle",
    "lg_throttle",
    "tex_throttle",
    "wait",
    "barrier",
    "membar",
    "math_pipe_throttle",
    "not_selected",
    "dispatch_stall",
    "no_instruction",
    "branch_resolving",
    "drain",
];

/// Every metric a diagnosis reads, for `ncu --metrics`.
pub fn wanted() -> Vec<String> {
    let mut all: Vec<String> = [
        DURATION,
        SM_PCT,
        DRAM_PCT,
        MEMORY_PCT,
        ACHIEVED_OCCUPANCY,
        THEORETICAL_OCCUPANCY,
        REGISTERS,
        WAVES,
        GRID,
        SMS,
        LOCAL_LOAD_BYTES,
        LOCAL_STORE_BYTES,
    ]
    .map(str::to_string)
    .into();
    all.extend(TENSOR_PIPES.map(str::to_string));
    all.extend(
        STALL_REASONS
            .iter()
            .map(|r| format!("{STALL_PREFIX}{r}{STALL_SUFFIX}")),
    );
    all
}

/// The numbers of one launch that the rules read; `None` where ncu gave none.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Profile {
    pub kernel: String,
    pub duration_us: Option<f64>,
    pub sm_pct: Option<f64>,
    pub dram_pct: Option<f64>,
    /// The memory units' speed of light (L1, L2 and DRAM, the largest).
    pub memory_pct: Option<f64>,
    pub achieved_occupancy_pct: Option<f64>,
    pub theoretical_occupancy_pct: Option<f64>,
    pub registers_per_thread: Option<f64>,
    /// Local-memory bytes loaded and stored: register spills.
    pub local_bytes: Option<f64>,
    pub tensor_pipe_pct: Option<f64>,
    pub waves_per_sm: Option<f64>,
    pub grid_blocks: Option<f64>,
    pub sms: Option<f64>,
    /// The largest warp-stall reasons, cycles per issued instruction, largest first.
    pub stalls: Vec<Stall>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub reason: String,
    pub cycles_per_instruction: f64,
}

impl Profile {
    pub fn of(launch: &Launch) -> Profile {
        let get = |name: &str| launch.metrics.get(name).copied();
        let local_bytes = match (get(LOCAL_LOAD_BYTES), get(LOCAL_STORE_BYTES)) {
            (None, None) => None,
            (load, store) => Some(load.unwrap_or(0.0) + store.unwrap_or(0.0)),
        };
        let mut stalls: Vec<Stall> = STALL_REASONS
            .iter()
            .filter_map(|reason| {
                let value = get(&format!("{STALL_PREFIX}{reason}{STALL_SUFFIX}"))?;
                (value > 0.0).then(|| Stall {
                    reason: reason.to_string(),
                    cycles_per_instruction: value,
                })
            })
            .collect();
        stalls.sort_by(|a, b| {
            b.cycles_per_instruction
                .total_cmp(&a.cycles_per_instruction)
        });
        stalls.truncate(TOP_STALLS);
        Profile {
            kernel: launch.kernel.clone(),
            duration_us: get(DURATION).map(|ns| ns / 1e3),
            sm_pct: get(SM_PCT),
            dram_pct: get(DRAM_PCT),
            memory_pct: get(MEMORY_PCT),
            achieved_occupancy_pct: get(ACHIEVED_OCCUPANCY),
            theoretical_occupancy_pct: get(THEORETICAL_OCCUPANCY),
            registers_per_thread: get(REGISTERS),
            local_bytes,
            tensor_pipe_pct: TENSOR_PIPES
                .iter()
                .filter_map(|m| get(m))
                .max_by(f64::total_cmp),
            waves_per_sm: get(WAVES),
            grid_blocks: get(GRID),
            sms: get(SMS),
            stalls,
        }
    }

    /// The larger of DRAM and the memory units' throughput.
    fn memory_throughput(&self) -> Option<f64> {
        match (self.dram_pct, self.memory_pct) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Which rule decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    NoThroughput,
    MemoryBound,
    ComputeBound,
    SmallGrid,
    Imbalance,
    Latency,
}

/// A named bottleneck, the rule that named it, and the numbers it read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    #[serde(deserialize_with = "cause_word")]
    pub cause: Cause,
    pub rule: Rule,
    /// The rule and its numbers in one line, e.g. "memory-bound: memory throughput 88% >= 60% ...".
    pub because: String,
    pub profile: Profile,
}

/// A cause as its word, read back from a cached diagnosis.
fn cause_word<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Cause, D::Error> {
    let word = String::deserialize(d)?;
    Cause::parse(&word).ok_or_else(|| serde::de::Error::custom(format!("unknown cause {word:?}")))
}

fn pct(value: f64) -> String {
    format!("{value:.0}%")
}

/// Applies the rules (module docs) to one launch's numbers.
pub fn diagnose(profile: &Profile) -> Diagnosis {
    let (cause, rule, because) = decide(profile);
    let mut because = format!("{}: {because}", rule_name(rule));
    if let Some(stalls) = stall_summary(&profile.stalls) {
        because += &format!("; top stalls {stalls}");
    }
    Diagnosis {
        cause,
        rule,
        because,
        profile: profile.clone(),
    }
}

fn rule_name(rule: Rule) -> &'static str {
    match rule {
        Rule::NoThroughput => "no-throughput",
        Rule::MemoryBound => "memory-bound",
        Rule::ComputeBound => "compute-bound",
        Rule::SmallGrid => "small-grid",
        Rule::Imbalance => "imbalance",
        Rule::Latency => "latency",
    }
}

fn decide(p: &Profile) -> (Cause, Rule, String) {
    // a metric ncu printed as "n/a" (parsed as NaN) is no more a reading than a missing one
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    let (Some(sm), Some(memory)) = (finite(p.sm_pct), finite(p.memory_throughput())) else {
        return (
            Cause::Unknown,
            Rule::NoThroughput,
            "ncu reported no SM or memory throughput".to_string(),
        );
    };
    let limit = THROUGHPUT_LIMIT_PCT;
    if memory >= limit && memory >= sm {
        return (
            Cause::Memory,
            Rule::MemoryBound,
            format!(
                "memory throughput {} >= {} of peak and >= SM throughput {}",
                pct(memory),
                pct(limit),
                pct(sm)
            ),
        );
    }
    if sm >= limit {
        let tensor = p
            .tensor_pipe_pct
            .map_or(String::new(), |t| format!(", tensor pipe {}", pct(t)));
        return (
            Cause::Compute,
            Rule::ComputeBound,
            format!(
                "SM throughput {} >= {} of peak and above memory throughput {}{tensor}",
                pct(sm),
                pct(limit),
                pct(memory)
            ),
        );
    }
    let both_low = format!(
        "SM {} and memory {} both under {}",
        pct(sm),
        pct(memory),
        pct(limit)
    );
    match (p.grid_blocks, p.sms, p.waves_per_sm) {
        (Some(grid), Some(sms), _) if grid < sms => {
            return (
                Cause::Scheduling,
                Rule::SmallGrid,
                format!("{both_low}; grid of {grid:.0} blocks for {sms:.0} SMs"),
            );
        }
        (None, _, Some(waves)) | (_, None, Some(waves)) if waves < 1.0 => {
            return (
                Cause::Scheduling,
                Rule::SmallGrid,
                format!("{both_low}; {waves:.2} waves per SM"),
            );
        }
        _ => {}
    }
    if let (Some(achieved), Some(theoretical)) =
        (p.achieved_occupancy_pct, p.theoretical_occupancy_pct)
        && achieved < OCCUPANCY_RATIO * theoretical
    {
        return (
            Cause::Scheduling,
            Rule::Imbalance,
            format!(
                "{both_low}; achieved occupancy {} under half the theoretical {}",
                pct(achieved),
                pct(theoretical)
            ),
        );
    }
    (Cause::Latency, Rule::Latency, both_low)
}

fn stall_summary(stalls: &[Stall]) -> Option<String> {
    (!stalls.is_empty()).then(|| {
        stalls
            .iter()
            .map(|s| format!("{} {:.1}", s.reason, s.cycles_per_instruction))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The launch that stands for the kernel when ncu profiled several: of the kernel with the most
/// profiled time in total (the main kernel, not a helper), its median launch by duration.
pub fn representative(launches: &[Launch]) -> Option<&Launch> {
    let duration = |l: &Launch| l.metrics.get(DURATION).copied().unwrap_or(0.0);
    let mut by_kernel: BTreeMap<&str, Vec<&Launch>> = BTreeMap::new();
    for launch in launches {
        by_kernel.entry(&launch.kernel).or_default().push(launch);
    }
    let (_, mut main) = by_kernel.into_iter().max_by(|(_, a), (_, b)| {
        let total = |v: &Vec<&Launch>| v.iter().map(|l| duration(l)).sum::<f64>();
        total(a).total_cmp(&total(b))
    })?;
    main.sort_by(|a, b| duration(a).total_cmp(&duration(b)));
    Some(main[main.len() / 2])
}

/// Known ncu failures, by what its output says, and what to tell the user: the message and its hint.
const FAILURES: [(&str, &str, &str); 3] = [
    (
        "ERR_NVGPUCTRPERM",
        "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM)",
        "run as root (sudo), or let every user profile: load the nvidia module with \
         NVreg_RestrictProfilingToAdminUsers=0 (e.g. `options nvidia NVreg_RestrictProfilingToAdminUsers=0` \
         in /etc/modprobe.d/, then reboot)",
    ),
    (
        "Failed to find metric",
        "this ncu does not know one of the diagnosis metrics",
        "see `ncu --query-metrics`; the metric set is `diagnose::wanted` (a newer Nsight Compute may be \
         needed)",
    ),
    (
        "No kernels were profiled",
        "ncu profiled no launch of the session kernel in this case",
        "check that the case launches the kernel more than the 3 skipped warm-up times, and that its \
         @ct.kernel names match what ncu reports",
    ),
];

/// A clear message and its hint for a known ncu failure found in its output, if any.
pub fn known_failure(ncu_output: &str) -> Option<(&'static str, &'static str)> {
    FAILURES
        .iter()
        .find(|(needle, _, _)| ncu_output.contains(needle))
        .map(|(_, message, hint)| (*message, *hint))
}

/// The metric of `metrics` (comma-separated, as passed to ncu) that ncu's output says it cannot find.
pub fn unknown_metric(ncu_output: &str, metrics: &str) -> Option<String> {
    const MESSAGE: &str = "Failed to find metric";
    let line = ncu_output.lines().find(|l| l.contains(MESSAGE))?;
    let (_, after) = line.split_once(MESSAGE)?;
    let named = after
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .find(|w| !w.is_empty())?;
    metrics
        .split(',')
        .find(|m| *m == named || m.split('.').next() == Some(named))
        .map(str::to_string)
}

/// `metrics` less `unknown`.
pub fn without(metrics: &str, unknown: &str) -> String {
    metrics
        .split(',')
        .filter(|m| *m != unknown)
        .collect::<Vec<_>>()
        .join(",")
}

/// The pytest node id of a recorded config (`classname::name` as JUnit wrote it) in `test_file`:
/// the classname's parts after the file's module name are classes.
pub fn node_id(test_file: &str, case: &str) -> String {
    let (classname, name) = case.rsplit_once("::").unwrap_or(("", case));
    let stem = std::path::Path::new(test_file)
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let parts: Vec<&str> = classname.split('.').collect();
    let classes = match parts.iter().position(|p| *p == stem) {
        Some(at) => &parts[at + 1..],
        None => &[][..],
    };
    let mut id = test_file.to_string();
    for class in classes {
        id += &format!("::{class}");
    }
    format!("{id}::{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(sm: f64, dram: f64) -> Profile {
        Profile {
            kernel: "k".into(),
            sm_pct: Some(sm),
            dram_pct: Some(dram),
            grid_blocks: Some(1024.0),
            sms: Some(132.0),
            achieved_occupancy_pct: Some(40.0),
            theoretical_occupancy_pct: Some(50.0),
            ..Profile::default()
        }
    }

    #[test]
    fn each_rule_with_its_numbers() {
        let small_grid = Profile {
            grid_blocks: Some(64.0),
            ..profile(20.0, 30.0)
        };
        let few_waves = Profile {
            grid_blocks: None,
            waves_per_sm: Some(0.48),
            ..profile(20.0, 30.0)
        };
        let imbalanced = Profile {
            achieved_occupancy_pct: Some(20.0),
            theoretical_occupancy_pct: Some(75.0),
            ..profile(20.0, 30.0)
        };
        let l2_bound = Profile {
            memory_pct: Some(82.0),
            ..profile(50.0, 30.0)
        };
        let mma = Profile {
            tensor_pipe_pct: Some(71.0),
            ..profile(78.0, 40.0)
        };
        let cases: [(Profile, Cause, Rule, &str); 9] = [
            (
                Profile::default(),
                Cause::Unknown,
                Rule::NoThroughput,
                "no-throughput: ncu reported no SM or memory throughput",
            ),
            // seen on an H200 for a matmul launch: every section read "n/a"
            (
                profile(f64::NAN, f64::NAN),
                Cause::Unknown,
                Rule::NoThroughput,
                "no-throughput: ncu reported no SM or memory throughput",
            ),
            (
                profile(35.0, 88.0),
                Cause::Memory,
                Rule::MemoryBound,
                "memory-bound: memory throughput 88% >= 60% of peak and >= SM throughput 35%",
            ),
            (
                l2_bound,
                Cause::Memory,
                Rule::MemoryBound,
                "memory-bound: memory throughput 82% >= 60% of peak and >= SM throughput 50%",
            ),
            (
                mma,
                Cause::Compute,
                Rule::ComputeBound,
                "compute-bound: SM throughput 78% >= 60% of peak and above memory throughput 40%, tensor pipe 71%",
            ),
            (
                small_grid,
                Cause::Scheduling,
                Rule::SmallGrid,
                "small-grid: SM 20% and memory 30% both under 60%; grid of 64 blocks for 132 SMs",
            ),
            (
                few_waves,
                Cause::Scheduling,
                Rule::SmallGrid,
                "small-grid: SM 20% and memory 30% both under 60%; 0.48 waves per SM",
            ),
            (
                imbalanced,
                Cause::Scheduling,
                Rule::Imbalance,
                "imbalance: SM 20% and memory 30% both under 60%; achieved occupancy 20% under half the theoretical 75%",
            ),
            (
                profile(20.0, 30.0),
                Cause::Latency,
                Rule::Latency,
                "latency: SM 20% and memory 30% both under 60%",
            ),
        ];
        for (p, cause, rule, because) in cases {
            let d = diagnose(&p);
            assert_eq!(
                (d.cause, d.rule, d.because.as_str()),
                (cause, rule, because)
            );
        }
        // a tie between memory and SM at the limit is memory: data movement is the limit to lift first
        assert_eq!(diagnose(&profile(60.0, 60.0)).cause, Cause::Memory);
        assert_eq!(diagnose(&profile(59.9, 59.9)).cause, Cause::Latency);
    }

    /// One profiled launch of `kernel` with these metrics (ncu's CSV reader is tested in `ncu`).
    fn launch(kernel: &str, metrics: &[(&str, f64)]) -> Launch {
        Launch {
            kernel: kernel.into(),
            metrics: metrics.iter().map(|(m, v)| (m.to_string(), *v)).collect(),
        }
    }

    /// Three profiled launches of a matmul and one of a small helper, with made-up numbers.
    fn launches() -> Vec<Launch> {
        let stall = |reason| format!("{STALL_PREFIX}{reason}{STALL_SUFFIX}");
        let (math, wait, barrier) = (stall("math_pipe_throttle"), stall("wait"), stall("barrier"));
        vec![
            launch("matmul_kernel", &[(DURATION, 41_000.0), (SM_PCT, 81.5)]),
            launch("matmul_kernel", &[(DURATION, 40_000.0), (SM_PCT, 80.0)]),
            launch("cast_kernel", &[(DURATION, 90_000.0)]),
            launch(
                "matmul_kernel",
                &[
                    (DURATION, 60_000.0),
                    (SM_PCT, 70.0),
                    (&math, 3.25),
                    (&wait, 1.5),
                    (&barrier, 0.0),
                    (LOCAL_STORE_BYTES, 4096.0),
                ],
            ),
        ]
    }

    #[test]
    fn several_launches_the_main_kernels_median() {
        let launches = launches();
        let chosen = representative(&launches).unwrap();
        assert_eq!(chosen.kernel, "matmul_kernel");
        let p = Profile::of(chosen);
        assert_eq!(p.duration_us, Some(41.0));
        assert_eq!(p.sm_pct, Some(81.5));
        let last = Profile::of(&launches[3]);
        assert_eq!(
            last.stalls,
            [
                Stall {
                    reason: "math_pipe_throttle".into(),
                    cycles_per_instruction: 3.25
                },
                Stall {
                    reason: "wait".into(),
                    cycles_per_instruction: 1.5
                }
            ]
        );
        assert_eq!(last.local_bytes, Some(4096.0));
        assert!(representative(&[]).is_none());
        // numbers the rules need are missing: unknown, never a guess
        assert_eq!(diagnose(&p).cause, Cause::Unknown);
    }

    #[test]
    fn permission_failure_gets_the_hint() {
        let output = "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not have \
                      permission to access NVIDIA GPU Performance Counters on the target device 0.\n";
        let (message, hint) = known_failure(output).unwrap();
        assert!(message.contains("ERR_NVGPUCTRPERM"), "{message}");
        assert!(hint.contains("run as root"), "{hint}");
        assert!(
            hint.contains("NVreg_RestrictProfilingToAdminUsers=0"),
            "{hint}"
        );
        assert_eq!(known_failure("==ERROR== some other failure"), None);
        let unknown =
            known_failure("==ERROR== Failed to find metric sm__pipe_tensor_op_gmma_cycles_active");
        assert!(unknown.unwrap().1.contains("ncu --query-metrics"));
        let none = known_failure("==PROF== Disconnected\n==WARNING== No kernels were profiled.\n");
        assert!(none.unwrap().1.contains("warm-up"));
    }

    #[test]
    fn an_unknown_metric_is_named_and_dropped() {
        let metrics = "gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed";
        let output = "==PROF== Connected to process 5\n==ERROR== Failed to find metric sm__pipe_tensor_op_gmma_cycles_active\n";
        let unknown = unknown_metric(output, metrics).unwrap();
        assert_eq!(
            unknown,
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
        );
        assert_eq!(
            without(metrics, &unknown),
            "gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
        );
        assert_eq!(unknown_metric("==ERROR== other", metrics), None);
        // a name ncu reports that is not ours cannot be dropped
        assert_eq!(
            unknown_metric("==ERROR== Failed to find metric xyz__abc", metrics),
            None
        );
    }

    #[test]
    fn node_ids_from_recorded_configs() {
        let file = "tests/ops/test_rms_norm.py";
        assert_eq!(
            node_id(
                file,
                "tests.ops.test_rms_norm.TestRMSNorm::test_perf[cutile-4096]"
            ),
            "tests/ops/test_rms_norm.py::TestRMSNorm::test_perf[cutile-4096]"
        );
        assert_eq!(
            node_id(file, "test_rms_norm::test_perf[a]"),
            "tests/ops/test_rms_norm.py::test_perf[a]"
        );
        assert_eq!(
            node_id(file, "test_perf[a]"),
            "tests/ops/test_rms_norm.py::test_perf[a]"
        );
    }

    #[test]
    fn the_metric_set() {
        let all = wanted();
        assert_eq!(all.len(), 12 + 2 + 14);
        assert!(all.contains(
            &"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio".to_string()
        ));
    }
}
