//! A gain the kernel earned. Every benchmark run carries a census of each perf case's timed call (the
//! plugin `cutile_perf_census.py`, loaded by `system::pytest`): the cuTile kernels it launched, where
//! they are defined, and the GPU time of every kernel that ran. A step that the rounds would keep is
//! held to it here, by `step` and, from the same runs in the evidence note, by `verify`:
//!
//! - in every config the candidate must launch a cuTile kernel defined in the session's allowed paths;
//! - those kernels must do at least the baseline's share of the GPU time, less [`SHARE_SLACK`];
//! - the timed calls must launch them as often per call as the census's own call does, as far as the
//!   baseline's did ([`LAUNCH_SLACK`]): a launch skipped only while timed lowers a mean by its share;
//! - with the census call's arguments (shapes, dtypes, strides, scalars, stream), as far as the
//!   baseline's did: the same kernel and grid given less to do, or another stream, only while timed;
//! - and return what the census call returns, as far as the baseline's did: bit for bit where the
//!   function is deterministic, else within the harness's tolerance;
//! - every run of a step must have measured with the same harness settings;
//! - the latency must not imply more memory bandwidth or math than the session's GPU has ([`physics`]).
//!
//! A candidate that fails any of them is reverted, with the config and what ran instead as the reason.
//!
//! The census's types and reading are here; the rules above in `rules.rs`, the harness settings in
//! `harness.rs`, the unseen-input runs in `unseen.rs`; whether a candidate did the baseline's GPU work
//! (no re-roll) in `alike.rs`, and the shortcut signs a change's diff shows in `shortcuts.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::record::evidence::RunFile;
use crate::rules::records::CaseReport;

mod alike;
mod harness;
pub mod physics;
mod rules;
mod shortcuts;
mod unseen;

pub use alike::{alike, unchanged};
pub use harness::{Settings, harness_settings, settings_departure};
pub use rules::{Rules, gate, ran_no_allowed_kernel};
pub use shortcuts::shortcut_signs;
pub use unseen::{judged, unseen_failures, unseen_run_name};

/// How far below the baseline's share of GPU time the allowed cuTile kernels may fall (a fraction):
/// an honest change moves a small copy or fill in or out of the kernel, not a tenth of the work.
pub const SHARE_SLACK: f64 = 0.10;

/// How far below the baseline's launches per timed call an allowed kernel's may fall (a fraction): a
/// kernel launches the same grids in every call of a case, so any shortfall is a launch skipped while
/// timed; a hundredth would move a mean by a hundredth, under the smallest gain tier.
pub const LAUNCH_SLACK: f64 = 0.01;

/// One case's census, as the plugin writes it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Census {
    pub taken: bool,
    /// Why no census was taken.
    #[serde(default)]
    pub why: Option<String>,
    #[serde(default)]
    pub launches: Vec<Launch>,
    /// Bytes of the distinct arrays the call's cuTile launches were given.
    #[serde(default)]
    pub bytes: u64,
    /// Those arrays, in the order they were first passed (none in censuses older than it).
    #[serde(default)]
    pub arrays: Vec<Array>,
    /// GPU time per kernel name; none where no profiler could be had.
    #[serde(default)]
    pub device: Option<Vec<DeviceTime>>,
    /// How long the census's untimed call took (none in censuses older than it).
    #[serde(default)]
    pub seconds: Option<f64>,
    /// What the harness's timed calls launched, counted (none in censuses older than it).
    #[serde(default)]
    pub timed: Option<Timed>,
    /// What the timed calls returned, against the census call's output (none in censuses older than it).
    #[serde(default)]
    pub outputs: Option<Outputs>,
    /// The harness call's settings, its defaults filled in (`use_cupti`, `rep`, ...); none in censuses
    /// older than them, or for a harness whose signature could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<BTreeMap<String, serde_json::Value>>,
    /// The harness function the census wrapped (`tests.common:benchmark`); none in censuses older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wraps: Option<String>,
    /// What of the harness was replaced after its import (a function of its module, or one it uses), in
    /// words: the number it reported is then not the timed calls' own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
}

/// The outputs of timed calls the plugin kept (one drawn at random by `seed`, and the last), each
/// compared with the census call's output.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Outputs {
    pub seed: u64,
    /// Why they could not be compared.
    #[serde(default)]
    pub why: Option<String>,
    /// Two untimed calls returned the same bits: the timed ones are held to them bit for bit.
    #[serde(default)]
    pub deterministic: bool,
    /// The tolerance a non-deterministic function's outputs are held to.
    #[serde(default)]
    pub tolerance: Option<Tolerance>,
    #[serde(default)]
    pub compared: Vec<Compared>,
    /// Whether an untimed call's output was overwritten before the harness began.
    #[serde(default)]
    pub poisoned: bool,
    #[serde(default)]
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
    /// Where it came from: the harness's `get_dtype_tolerances(float16)`, or torch's defaults.
    pub source: String,
}

/// One kept timed call's output against the census call's.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Compared {
    /// Which of the harness's calls it was (from 1).
    pub call: u64,
    /// Why it was kept: `fresh` (the first call on new input values), `drawn` or `last`; none in older
    /// censuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// Equal under the rule that applied (bit for bit, or within the tolerance).
    pub equal: bool,
    /// The largest absolute difference; none where one side is not a number there.
    #[serde(default)]
    pub max_abs: Option<f64>,
    /// The elements outside the tolerance, of `elements`.
    #[serde(default)]
    pub differing: u64,
    #[serde(default)]
    pub elements: u64,
    /// Why the two cannot be compared element by element (another shape, dtype or structure).
    #[serde(default)]
    pub why: Option<String>,
}

/// The harness's calls of a case's function and the cuTile launches they made, per kernel and grid.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Timed {
    pub calls: u64,
    pub launches: Vec<TimedLaunch>,
    /// The timed call from which the function's inputs held new values, written in place; none where
    /// the harness called it too few times, its inputs could not be rewritten, or in older censuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_inputs: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct TimedLaunch {
    pub kernel: String,
    pub file: Option<String>,
    pub grid: Vec<u64>,
    /// The launch's stream and arguments, as [`Launch::signatures`] (none in censuses older than it).
    #[serde(default)]
    pub signature: Option<String>,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Launch {
    pub kernel: String,
    /// Relative to the tree the run ran in; none for a kernel whose file is unknown.
    pub file: Option<String>,
    pub grids: Vec<Vec<u64>>,
    pub count: u32,
    /// The distinct compiler hints it was launched with (`{"occupancy": 7, "opt_level": 3}`): what an
    /// autotuner picked in this process. None for kernels without hints, and in censuses older than it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<BTreeMap<String, serde_json::Value>>,
    /// The distinct signatures it was launched with: its stream, then each argument, an array as
    /// `dtype[shape]/strides`, a scalar as its value (`stream=0 float16[4096,1024]/1024,1 ... 1e-05`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
}

/// An array a cuTile launch was given: its shape and its dtype (`float16`, as torch names it).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Array {
    pub shape: Vec<u64>,
    pub dtype: String,
}

impl Array {
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct DeviceTime {
    pub name: String,
    pub us: f64,
}

/// Where a GPU kernel came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A cuTile kernel defined in one of the session's allowed paths.
    Allowed,
    /// A cuTile kernel defined elsewhere.
    OtherCutile,
    /// Anything else: torch, cuBLAS, Triton, a copy or a fill.
    Other,
}

impl Census {
    /// The census of one case of a JUnit file; `Err` when it is unreadable or written more than once.
    pub fn of(case: &CaseReport) -> Result<Option<Census>, String> {
        match case.census_properties.as_slice() {
            [] => Ok(None),
            [one] => serde_json::from_str(one)
                .map(Some)
                .map_err(|e| format!("its census is unreadable ({e})")),
            _ => Err("its census was written more than once".into()),
        }
    }

    /// A GPU kernel's origin: a cuTile launch of this call whose Python name the kernel's name holds.
    pub fn origin(&self, kernel: &str, allowed: &[String]) -> Origin {
        let launched = self
            .launches
            .iter()
            .filter(|launch| kernel.contains(&launch.kernel))
            .max_by_key(|launch| launch.kernel.len());
        match launched {
            Some(launch) if launch.file.as_ref().is_some_and(|f| allowed.contains(f)) => {
                Origin::Allowed
            }
            Some(_) => Origin::OtherCutile,
            None => Origin::Other,
        }
    }

    /// Whether a cuTile kernel of the allowed paths was launched.
    pub fn launched_allowed(&self, allowed: &[String]) -> bool {
        self.launches
            .iter()
            .any(|launch| launch.file.as_ref().is_some_and(|f| allowed.contains(f)))
    }

    /// The allowed cuTile kernels' share of the call's GPU time, and the heaviest other kernel with its
    /// share; none without GPU kernel times (or with no GPU time at all).
    pub fn allowed_share(&self, allowed: &[String]) -> Option<(f64, Option<(String, f64)>)> {
        let device = self.device.as_ref()?;
        let total: f64 = device.iter().map(|d| d.us).sum();
        if total <= 0.0 {
            return None;
        }
        let mut allowed_us = 0.0;
        let mut heaviest_other: Option<&DeviceTime> = None;
        for time in device {
            if self.origin(&time.name, allowed) == Origin::Allowed {
                allowed_us += time.us;
            } else if heaviest_other.is_none_or(|h| time.us > h.us) {
                heaviest_other = Some(time);
            }
        }
        Some((
            allowed_us / total,
            heaviest_other.map(|h| (h.name.clone(), h.us / total)),
        ))
    }
}

/// The seconds a part of the censuses of `runs` took (`of`: the census call's, the output check's),
/// every case of every run.
pub fn seconds(runs: &[RunFile], of: fn(&Census) -> Option<f64>) -> f64 {
    runs.iter()
        .filter_map(|run| run.cases().ok())
        .flatten()
        .filter_map(|case| Census::of(&case).ok().flatten())
        .filter_map(|census| of(&census))
        .fold(0.0, |sum, seconds| sum + seconds)
}

/// A run named `name` whose one perf case, `t::test_perf[cutile]`, carries `census`: for the tests of
/// what reads censuses.
#[cfg(test)]
pub(crate) fn run_with_census(name: &str, census: &Census) -> RunFile {
    let json = serde_json::to_string(census)
        .unwrap()
        .replace('"', "&quot;");
    RunFile::new(
        name,
        crate::rules::records::RecordFile {
            format: crate::rules::records::RecordFormat::Junit,
            text: format!(
                r#"<testsuite><testcase classname="t" name="test_perf[cutile]"><properties><property name="cutile_perf_census" value="{json}"/></properties></testcase></testsuite>"#
            ),
        },
    )
}

/// A side's first round (`round-1-<side>`) whose one perf case launched `kernel` and ran `device` on
/// the GPU: for the tests of what compares the two sides.
#[cfg(test)]
pub(crate) fn first_round(side: &str, kernel: &str, device: &str) -> RunFile {
    let census = tests::census(&[(kernel, "k.py")], &[(device, 1.0)], 0);
    run_with_census(&format!("round-1-{side}"), &census)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::records;

    /// A taken census whose call launched each of `launches` (kernel, file) once on grid 132 and ran
    /// `device` (kernel, microseconds): the rules' and the comparisons' tests build on it.
    pub(super) fn census(launches: &[(&str, &str)], device: &[(&str, f64)], bytes: u64) -> Census {
        Census {
            taken: true,
            why: None,
            launches: launches
                .iter()
                .map(|(kernel, file)| Launch {
                    kernel: kernel.to_string(),
                    file: Some(file.to_string()),
                    grids: vec![vec![132]],
                    count: 1,
                    hints: Vec::new(),
                    signatures: Vec::new(),
                })
                .collect(),
            bytes,
            arrays: Vec::new(),
            seconds: None,
            timed: None,
            outputs: None,
            harness: None,
            wraps: None,
            replaced: None,
            device: Some(
                device
                    .iter()
                    .map(|(name, us)| DeviceTime {
                        name: name.to_string(),
                        us: *us,
                    })
                    .collect(),
            ),
        }
    }

    pub(super) const KERNEL: &str = "src/tilegym/ops/cutile/rms_norm.py";

    pub(super) fn allowed() -> Vec<String> {
        vec![KERNEL.to_string()]
    }

    #[test]
    fn origins_come_from_the_launches_of_the_same_call() {
        let c = census(
            &[
                ("rms_norm_kernel", KERNEL),
                ("helper_kernel", "src/other.py"),
            ],
            &[],
            0,
        );
        assert_eq!(
            c.origin("rms_norm_kernel_0x12", &allowed()),
            Origin::Allowed
        );
        assert_eq!(c.origin("helper_kernel", &allowed()), Origin::OtherCutile);
        assert_eq!(c.origin("sm90_xmma_gemm_f16", &allowed()), Origin::Other);
    }

    /// A census of kernel `k` (grid 132, once per call) whose harness called the function `calls` times
    /// and launched `k` with each of `grids` as often as given.
    pub(super) fn timed(calls: u64, grids: &[(u64, u64)]) -> Census {
        Census {
            timed: Some(Timed {
                calls,
                launches: (grids.iter())
                    .map(|&(grid, count)| TimedLaunch {
                        kernel: "k".into(),
                        file: Some(KERNEL.into()),
                        grid: vec![grid],
                        signature: None,
                        count,
                    })
                    .collect(),
                fresh_inputs: None,
            }),
            ..census(&[("k", KERNEL)], &[("k", 100.0)], 0)
        }
    }

    #[test]
    fn a_census_written_twice_is_refused() {
        let case = CaseReport {
            id: "t::p".into(),
            outcome: records::CaseOutcome::Passed,
            record: None,
            census_properties: vec!["{\"taken\": false}".into(), "{\"taken\": true}".into()],
        };
        assert_eq!(
            Census::of(&case).unwrap_err(),
            "its census was written more than once"
        );
    }
}
