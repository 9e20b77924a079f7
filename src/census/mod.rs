//! A gain the kernel earned. Every benchmark run carries a census of each perf case's timed call (the
//! plugin `cutile_perf_census.py`, loaded by `pytest.rs`): the cuTile kernels it launched, where they are
//! defined, and the GPU time of every kernel that ran. A step that the rounds would keep is held to it
//! here, by `step` and, from the same runs in the evidence note, by `verify`:
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

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::compile;
use crate::decision::{Attempt, Decided, Tier};
use crate::evidence::RunFile;
use crate::peaks::Peak;
use crate::records::{self, CaseReport};
use crate::session::Session;

pub mod physics;

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
    /// share; none without device times (or with no GPU time at all).
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

    /// The launches per timed call of each allowed kernel, against its launches in the census's own
    /// call (with the grids that call used): 1 where every timed call launched it as that call did. None
    /// without the timed counts (censuses older than them) or a timed call.
    fn timed_rates(&self, allowed: &[String]) -> Option<Vec<(String, f64)>> {
        let timed = self.timed.as_ref().filter(|timed| timed.calls > 0)?;
        let rates = (self.launches.iter())
            .filter(|launch| launch.file.as_ref().is_some_and(|f| allowed.contains(f)))
            .map(|launch| {
                let counted: u64 = (timed.launches.iter())
                    .filter(|t| {
                        t.kernel == launch.kernel
                            && t.file == launch.file
                            && launch.grids.contains(&t.grid)
                    })
                    .map(|t| t.count)
                    .sum();
                let rate = counted as f64 / timed.calls as f64 / f64::from(launch.count.max(1));
                (launch.kernel.clone(), rate)
            })
            .collect();
        Some(rates)
    }
}

impl Census {
    /// Of each allowed kernel's timed launches with the census call's grids, the share given one of
    /// the census call's signatures, with the first other one and the census's: none without the
    /// signatures (censuses older than them) or a timed launch.
    fn signature_shares(&self, allowed: &[String]) -> Option<Vec<SignatureShare>> {
        let timed = self.timed.as_ref()?;
        let shares: Vec<SignatureShare> = (self.launches.iter())
            .filter(|launch| launch.file.as_ref().is_some_and(|f| allowed.contains(f)))
            .filter(|launch| !launch.signatures.is_empty())
            .filter_map(|launch| {
                let (mut all, mut same, mut other) = (0, 0, None);
                for t in timed.launches.iter().filter(|t| {
                    t.kernel == launch.kernel
                        && t.file == launch.file
                        && launch.grids.contains(&t.grid)
                }) {
                    let Some(signature) = &t.signature else {
                        continue;
                    };
                    all += t.count;
                    if launch.signatures.contains(signature) {
                        same += t.count;
                    } else {
                        other.get_or_insert_with(|| signature.clone());
                    }
                }
                (all > 0).then(|| SignatureShare {
                    kernel: launch.kernel.clone(),
                    share: same as f64 / all as f64,
                    other: other.map(|o| (o, launch.signatures[0].clone())),
                })
            })
            .collect();
        Some(shares)
    }
}

/// An allowed kernel's timed launches given the census call's arguments (a share of them), and the
/// first other signature with the census's.
struct SignatureShare {
    kernel: String,
    share: f64,
    other: Option<(String, String)>,
}

impl Outputs {
    /// Every kept output equalled the census call's, under the rule that applied.
    fn held(&self) -> bool {
        self.why.is_none() && self.compared.iter().all(|c| c.equal)
    }

    /// How far the first kept output that was not the census call's was off, and what it was held to.
    fn off(&self) -> Option<String> {
        if let Some(why) = &self.why {
            return Some(format!(
                "the timed calls' outputs could not be compared with the census call's ({why})"
            ));
        }
        let c = self.compared.iter().find(|c| !c.equal)?;
        let how = match (&c.why, c.max_abs) {
            (Some(why), _) => why.clone(),
            (None, max) => format!(
                "{} of {} elements off, {}",
                c.differing,
                c.elements,
                max.map_or("not a number where the census's output is".into(), |m| {
                    format!("by up to {m:.3e}")
                })
            ),
        };
        let rule = match (&self.tolerance, self.deterministic) {
            (_, true) | (None, _) => {
                "bit for bit, as two untimed calls agreed bit for bit".to_string()
            }
            (Some(t), false) => format!("within rtol {}, atol {} ({})", t.rtol, t.atol, t.source),
        };
        Some(format!(
            "timed call {} returned other output than the census's own call: {how} (held {rule})",
            c.call
        ))
    }
}

/// Each config's censuses from the runs of one side (`candidate` or `baseline`), rounds and
/// confirmation rounds alike.
fn side_censuses(runs: &[RunFile], side: &str) -> Result<Vec<(String, Census)>, String> {
    let mut found = Vec::new();
    for run in runs
        .iter()
        // the benchmark rounds and the confirming rounds; not the correctness runs on unseen inputs
        .filter(|run| run.name.contains("round-") && run.name.ends_with(&format!("-{side}")))
    {
        let cases = run
            .records
            .cases()
            .map_err(|e| format!("{}: {e:#}", run.name))?;
        for case in &cases {
            if let Some(census) = Census::of(case).map_err(|why| format!("{}: {why}", case.id))? {
                found.push((case.id.clone(), census));
            }
        }
    }
    Ok(found)
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

/// A perf case's harness settings, by name.
pub type Settings = BTreeMap<String, serde_json::Value>;

/// Each perf case's harness settings in `runs`, as the first census that has them gives them.
pub fn harness_settings(runs: &[RunFile]) -> BTreeMap<String, Settings> {
    let mut found = BTreeMap::new();
    for case in runs.iter().filter_map(|run| run.cases().ok()).flatten() {
        if let Some(settings) = Census::of(&case).ok().flatten().and_then(|c| c.harness) {
            found.entry(case.id).or_insert(settings);
        }
    }
    found
}

/// The first perf case of `runs` measured with other harness settings than the session's start
/// (`start`, [`harness_settings`] of its runs), as a sentence; none where every case measured alike, or
/// where either side has no settings (runs older than them).
pub fn settings_departure(start: &BTreeMap<String, Settings>, runs: &[RunFile]) -> Option<String> {
    let here = harness_settings(runs);
    here.iter().find_map(|(case, settings)| {
        let [here, there] = first_difference(settings, start.get(case)?)?;
        Some(format!(
            "{case} measured with {here}, the session's start with {there}"
        ))
    })
}

/// What the gate needs of the session.
pub struct Rules<'a> {
    pub allowed: &'a [String],
    /// The session GPU's peaks, when it is one the table knows.
    pub peak: Option<&'a Peak>,
    /// What the kernel computes, when its FLOPs can be told from its tensors' shapes.
    pub op: Option<physics::Op>,
}

impl Rules<'_> {
    pub fn of(session: &Session) -> Rules<'_> {
        Rules {
            allowed: &session.allowed,
            peak: session.gpu.as_deref().and_then(crate::peaks::lookup),
            op: physics::Op::of(&session.kernel),
        }
    }
}

/// The paired verdict `decided`, reverted when the candidate's census shows a gain the kernel did not
/// earn. A verdict that reverts already, or runs without any census (sessions recorded before it), pass
/// through unchanged.
pub fn gate(decided: Decided, runs: &[RunFile], rules: &Rules) -> Decided {
    if decided.tier == Tier::Revert {
        return decided;
    }
    match refusal(&decided, runs, rules) {
        None => decided,
        Some(why) => Decided {
            tier: Tier::Revert,
            reason: format!("not the kernel's own gain: {why}"),
            ..decided
        },
    }
}

/// Why the candidate's gain is refused, naming the first config that shows it.
fn refusal(decided: &Decided, runs: &[RunFile], rules: &Rules) -> Option<String> {
    let (candidate, baseline) = match (
        side_censuses(runs, "candidate"),
        side_censuses(runs, "baseline"),
    ) {
        (Ok(candidate), Ok(baseline)) => (candidate, baseline),
        (Err(why), _) | (_, Err(why)) => return Some(format!("the census cannot be read: {why}")),
    };
    for config in &decided.estimate.configs {
        let of = |side: &[(String, Census)]| -> Vec<Census> {
            side.iter()
                .filter(|(id, census)| id == &config.test && census.taken)
                .map(|(_, census)| census.clone())
                .collect()
        };
        let (ours, theirs) = (of(&candidate), of(&baseline));
        if theirs.is_empty() {
            continue; // no census of the baseline: nothing to hold the candidate to
        }
        let test = &config.test;
        if ours.is_empty() {
            let why = candidate
                .iter()
                .find(|(id, _)| id == test)
                .and_then(|(_, census)| census.why.clone())
                .unwrap_or_else(|| "none was written".into());
            return Some(format!(
                "{test}: no census of the candidate's timed call ({why})"
            ));
        }
        if let Some(why) = measured_differently(&ours, &theirs).or_else(|| {
            ours.iter().find_map(|census| {
                share_refusal(census, &theirs, rules.allowed)
                    .or_else(|| skipped_launches(census, &theirs, rules.allowed))
                    .or_else(|| other_arguments(census, &theirs, rules.allowed))
                    .or_else(|| other_outputs(census, &theirs))
            })
        }) {
            return Some(format!("{test}: {why}"));
        }
        if let Some(why) = rules.peak.and_then(|peak| {
            physics::beyond(
                config.baseline_ms,
                config.candidate_ms,
                &theirs,
                peak,
                rules.op,
            )
        }) {
            return Some(format!("{test}: {why}"));
        }
    }
    None
}

/// One candidate census against the baseline's: an allowed cuTile kernel must run, and do at least the
/// baseline's share of the GPU time less the slack.
fn share_refusal(census: &Census, baseline: &[Census], allowed: &[String]) -> Option<String> {
    let instead = |other: Option<(String, f64)>| match other {
        Some((name, share)) => format!(": {:.0}% of GPU time in {name}", share * 100.0),
        None => String::new(),
    };
    if !census.launched_allowed(allowed) {
        let other = census.allowed_share(allowed).and_then(|(_, other)| other);
        return Some(format!(
            "no cuTile kernel from the allowed paths ran in the timed call{}",
            instead(other)
        ));
    }
    let (share, other) = census.allowed_share(allowed)?;
    let required = baseline
        .iter()
        .filter_map(|b| b.allowed_share(allowed).map(|(share, _)| share))
        .reduce(f64::min)?;
    (share < required - SHARE_SLACK).then(|| {
        format!(
            "cuTile kernels from the allowed paths did {:.0}% of the timed GPU work (baseline {:.0}%){}",
            share * 100.0,
            required * 100.0,
            instead(other)
        )
    })
}

/// One candidate census against the baseline's: each allowed kernel launched in the timed calls as often
/// per call as in the census's own call, as far as the baseline's were (its least rate, at most 1).
fn skipped_launches(census: &Census, baseline: &[Census], allowed: &[String]) -> Option<String> {
    let required = (baseline.iter())
        .filter_map(|b| b.timed_rates(allowed))
        .flatten()
        .map(|(_, rate)| rate)
        .fold(1.0, f64::min);
    let (kernel, rate) = census
        .timed_rates(allowed)?
        .into_iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    (rate < required - LAUNCH_SLACK).then(|| {
        format!(
            "the timed calls launched {kernel} {:.0}% as often per call as the census's own call did \
             (baseline {:.0}%): launches skipped while timed",
            rate * 100.0,
            required * 100.0
        )
    })
}

/// One candidate census against the baseline's: each allowed kernel's timed launches given the census
/// call's arguments and stream, as far as the baseline's were (its least share, at most 1).
fn other_arguments(census: &Census, baseline: &[Census], allowed: &[String]) -> Option<String> {
    let required = (baseline.iter())
        .filter_map(|b| b.signature_shares(allowed))
        .flatten()
        .map(|s| s.share)
        .fold(1.0, f64::min);
    let worst = census
        .signature_shares(allowed)?
        .into_iter()
        .min_by(|a, b| a.share.total_cmp(&b.share))?;
    (worst.share < required - LAUNCH_SLACK).then(|| {
        let differs = worst
            .other
            .map(|(timed, theirs)| format!(": {}", differing_parts(&timed, &theirs)))
            .unwrap_or_default();
        format!(
            "the timed calls gave {} other arguments than the census's own call in {:.0}% of its \
             launches (baseline {:.0}%){differs}",
            worst.kernel,
            (1.0 - worst.share) * 100.0,
            (1.0 - required) * 100.0
        )
    })
}

/// Where a timed launch's signature differs from the census call's, part by part (the stream, then
/// each argument by its position).
fn differing_parts(timed: &str, census: &str) -> String {
    let (ours, theirs): (Vec<&str>, Vec<&str>) =
        (timed.split(' ').collect(), census.split(' ').collect());
    if ours.len() != theirs.len() {
        return format!("timed `{timed}`, census `{census}`");
    }
    let parts: Vec<String> = (ours.iter().zip(&theirs).enumerate())
        .filter(|(_, (a, b))| a != b)
        .map(|(index, (a, b))| match index {
            0 => format!("{a} (census {b})"),
            _ => format!("argument {index} {a} (census {b})"),
        })
        .collect();
    parts.join(", ")
}

/// One candidate census against the baseline's: the timed calls' kept outputs equal to the census
/// call's, where every baseline census's were (a function whose outputs change from call to call, as
/// one working in place, is not held to it).
fn other_outputs(census: &Census, baseline: &[Census]) -> Option<String> {
    let outputs = census.outputs.as_ref()?;
    let baseline_held = (baseline.iter()).all(|b| b.outputs.as_ref().is_some_and(Outputs::held));
    (baseline_held && !outputs.held())
        .then(|| outputs.off())
        .flatten()
}

/// Whether a config's runs, of both sides, measured with other harness settings than one another (a
/// worker started under another `CUPTI` or `REP`, say): the first setting that differs.
fn measured_differently(ours: &[Census], theirs: &[Census]) -> Option<String> {
    let mut settings = (ours.iter().map(|c| ("candidate", c)))
        .chain(theirs.iter().map(|c| ("baseline", c)))
        .filter_map(|(side, census)| Some((side, census.harness.as_ref()?)));
    let (first_side, first) = settings.next()?;
    settings.find_map(|(side, other)| {
        let [ours, theirs] = first_difference(other, first)?;
        Some(format!(
            "its runs measured with other harness settings: {ours} in the {side}'s, {theirs} in the \
             {first_side}'s"
        ))
    })
}

/// The first setting `ours` and `theirs` differ in, as each gives it (`use_cupti=false`, `rep unset`).
fn first_difference(ours: &Settings, theirs: &Settings) -> Option<[String; 2]> {
    let names: BTreeSet<&String> = ours.keys().chain(theirs.keys()).collect();
    let name = names.into_iter().find(|n| ours.get(*n) != theirs.get(*n))?;
    Some([ours, theirs].map(|s| {
        s.get(name)
            .map_or(format!("{name} unset"), |v| format!("{name}={v}"))
    }))
}

/// The attempt paired rounds make once the kernel is held to what it earned: the census gate, then,
/// for a verdict that still keeps, the correctness runs on unseen inputs (`replay::attempt`, for `step`
/// and `verify` alike; `step` gates on its own only to know whether to make those runs).
pub fn judged(decided: Decided, runs: &[RunFile], rules: &Rules) -> Attempt {
    with_unseen(gate(decided, runs, rules), runs)
}

/// A verdict already through [`gate`], held to the unseen-input runs.
fn with_unseen(decided: Decided, runs: &[RunFile]) -> Attempt {
    match unseen_failures(runs) {
        Some((offset, failed)) if decided.tier != Tier::Revert => {
            Attempt::UnseenInputsFailed { failed, offset }
        }
        _ => Attempt::paired(decided),
    }
}

/// The unseen-input correctness runs of a step, by name: `unseen-<offset>-candidate` and `-baseline`.
pub fn unseen_run_name(offset: u32, side: &str) -> String {
    format!("unseen-{offset}-{side}")
}

/// The cases the candidate failed on inputs neither side had seen, with the seed offset; none when no such
/// run was made or it passed every case. The baseline's run is made only when the candidate's did not pass
/// them all: a case the baseline's code fails too on those inputs is the test's, not the change's, and does
/// not count (nor does any, where the baseline's run gave no readable JUnit file to hold the candidate to).
/// A candidate run with no JUnit file (it died) fails as a whole.
pub fn unseen_failures(runs: &[RunFile]) -> Option<(u32, Vec<String>)> {
    let of_side = |side: &str| {
        runs.iter().find_map(|run| {
            let offset = run.name.strip_prefix("unseen-")?.strip_suffix(side)?;
            Some((offset.parse::<u32>().ok()?, run))
        })
    };
    let (candidate, baseline) = (of_side("-candidate"), of_side("-baseline"));
    let offset = candidate.or(baseline)?.0;
    let passed: Option<Vec<String>> = match baseline {
        Some((_, baseline)) => Some(
            baseline
                .cases()
                .ok()?
                .into_iter()
                .filter(|case| case.outcome == records::CaseOutcome::Passed)
                .map(|case| case.id)
                .collect(),
        ),
        None => None,
    };
    let Some((_, candidate)) = candidate else {
        return Some((offset, vec!["the run ended without a JUnit file".into()]));
    };
    let failed: Vec<String> = match candidate.cases() {
        Ok(cases) => cases
            .into_iter()
            .filter(|case| {
                matches!(
                    case.outcome,
                    records::CaseOutcome::Failed(_) | records::CaseOutcome::Error(_)
                ) && passed
                    .as_ref()
                    .is_none_or(|passed| passed.contains(&case.id))
            })
            .map(|case| case.id)
            .collect(),
        Err(e) => vec![format!("its JUnit file is unreadable ({e:#})")],
    };
    (!failed.is_empty()).then_some((offset, failed))
}

/// No re-roll: whether the candidate shows the baseline's code as far as the GPU can tell, so that
/// measuring it again could only draw another sample of the same work. [`alike`] says why not.
pub fn unchanged(runs: &[RunFile]) -> bool {
    alike(runs).is_ok()
}

/// The run of `side` that carries the kernels its code compiled: the first round's (its dumps are
/// those of the rounds' own runs), or in older notes the compile run of its own (`compile-<side>`).
fn compiled_run<'r>(runs: &'r [RunFile], side: &str) -> Option<&'r RunFile> {
    runs.iter()
        .find(|run| run.compiled.is_some() && run.name.ends_with(&format!("-{side}")))
}

/// `Ok` when the two sides did the same GPU work: every perf case the same cuTile launches (kernel, file,
/// grids, count) and the same GPU kernels, and every launched kernel compiled to the same Tile IR in each
/// signature both sides compiled (at least one; a signature only one side compiled, as for a dtype
/// only its correctness run used, is not compared). Anything missing (a run that failed, a case without
/// a census or device times, a launched kernel without a dump) is not alike: the candidate is
/// benchmarked. `Err` says what differs first, for the evidence to be read on its own.
pub fn alike(runs: &[RunFile]) -> Result<(), String> {
    let work = |side: &str| {
        let run =
            compiled_run(runs, side).ok_or_else(|| format!("no dumps of the {side}'s code"))?;
        gpu_work(run).map_err(|why| format!("the {side}'s run {}: {why}", run.name))
    };
    let (ours, theirs) = (work("candidate")?, work("baseline")?);
    let ids = |work: &GpuWork| work.cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    if ids(&ours) != ids(&theirs) {
        return Err(format!(
            "the perf cases differ (candidate: {}, baseline: {})",
            ids(&ours).join(", "),
            ids(&theirs).join(", ")
        ));
    }
    for (a, b) in ours.cases.iter().zip(&theirs.cases) {
        if a.launches != b.launches {
            return Err(format!(
                "{}: the cuTile launches differ (candidate: {}, baseline: {})",
                a.id,
                shown_launches(&a.launches),
                shown_launches(&b.launches)
            ));
        }
        if a.ran != b.ran {
            return Err(format!(
                "{}: the GPU kernels differ (candidate: {}, baseline: {})",
                a.id,
                a.ran.join(", "),
                b.ran.join(", ")
            ));
        }
    }
    for function in ours.signatures.keys() {
        let (mine, base) = (&ours.signatures[function], &theirs.signatures[function]);
        let mut common = mine
            .keys()
            .filter(|entry| base.contains_key(*entry))
            .peekable();
        if common.peek().is_none() {
            let names = |s: &Signatures| s.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(format!(
                "{function}: no signature compiled on both sides (candidate: {}, baseline: {})",
                names(mine),
                names(base)
            ));
        }
        if let Some(entry) = common.find(|entry| mine[*entry] != base[*entry]) {
            let blobs = |s: &Signatures| {
                let short: Vec<&str> = s[entry].iter().map(|b| &b[..b.len().min(12)]).collect();
                short.join(" ")
            };
            return Err(format!(
                "{entry} compiled to other Tile IR (candidate {}, baseline {})",
                blobs(mine),
                blobs(base)
            ));
        }
    }
    Ok(())
}

fn shown_launches(launches: &[Launch]) -> String {
    let shown: Vec<String> = launches
        .iter()
        .map(|l| format!("{} grids {:?} x{}", l.kernel, l.grids, l.count))
        .collect();
    shown.join("; ")
}

/// A launched function's compiled signatures: each compiled name, with the Tile IR blobs dumped for it
/// (one, unless the compiler gave two texts for one signature).
type Signatures = BTreeMap<String, BTreeSet<String>>;

/// What one side's GPU did: per perf case its cuTile launches and the names of every GPU kernel it ran,
/// sorted by case; the signatures compiled per launched function.
#[derive(Debug, PartialEq)]
struct GpuWork {
    cases: Vec<CaseWork>,
    signatures: BTreeMap<String, Signatures>,
}

#[derive(Debug, PartialEq)]
struct CaseWork {
    id: String,
    launches: Vec<Launch>,
    ran: Vec<String>,
}

fn gpu_work(run: &RunFile) -> Result<GpuWork, String> {
    let compiled = run
        .compiled
        .as_ref()
        .filter(|kernels| !kernels.is_empty())
        .ok_or("no kernel was dumped")?;
    let cases = run.cases().map_err(|e| format!("{e:#}"))?;
    let mut work = Vec::new();
    for case in cases {
        let census = match Census::of(&case).map_err(|why| format!("{}: {why}", case.id))? {
            Some(census) if census.taken && case.outcome == records::CaseOutcome::Passed => census,
            Some(_) => return Err(format!("{}: no census of a passed case", case.id)),
            None => continue, // not a perf case the plugin saw (a skip)
        };
        if census.launches.is_empty() {
            return Err(format!("{}: no cuTile launch", case.id));
        }
        // an autotuner's pick is drawn per process: the code's identity is its Tile IR, compared below
        let mut launches: Vec<Launch> = (census.launches.into_iter())
            .map(|launch| Launch {
                hints: Vec::new(),
                // a stream's handle is the process's; the arguments show in the compiled signatures
                signatures: Vec::new(),
                ..launch
            })
            .collect();
        launches.sort_by(|a, b| (&a.kernel, &a.file).cmp(&(&b.kernel, &b.file)));
        let device = census
            .device
            .ok_or_else(|| format!("{}: no GPU times", case.id))?;
        let mut ran: Vec<String> = device.into_iter().map(|d| d.name).collect();
        ran.sort();
        work.push(CaseWork {
            id: case.id,
            launches,
            ran,
        });
    }
    if work.is_empty() {
        return Err("no perf case with a census".into());
    }
    work.sort_by(|a, b| a.id.cmp(&b.id));
    let mut functions: Vec<&str> = work
        .iter()
        .flat_map(|case| case.launches.iter().map(|l| l.kernel.as_str()))
        .collect();
    functions.sort();
    functions.dedup();
    let mut signatures: BTreeMap<String, Signatures> = BTreeMap::new();
    for kernel in compiled {
        for entry in &kernel.entries {
            if let Some(function) = compile::function_of(entry, &functions) {
                signatures
                    .entry(function.to_string())
                    .or_default()
                    .entry(entry.clone())
                    .or_default()
                    .insert(kernel.blob.clone());
            }
        }
    }
    if let Some(missing) = functions.iter().find(|f| !signatures.contains_key(**f)) {
        return Err(format!(
            "{missing} was launched but no dump of it was found"
        ));
    }
    Ok(GpuWork {
        cases: work,
        signatures,
    })
}

/// What a change adds that often signals a shortcut rather than a faster kernel: calls into libraries
/// that do the work themselves, caches that remember results, and threads or processes of its own (work
/// beside the measured kernel, or under the other side's measurement). A note for the step's report, not a
/// gate: an honest change may have a reason for each. `diff` is a unified diff of the change.
pub fn shortcut_signs(diff: &str) -> Vec<String> {
    const LIBRARY_CALLS: &[(&str, &str)] = &[
        ("torch.matmul(", "a torch matrix multiply"),
        ("torch.mm(", "a torch matrix multiply"),
        ("torch.bmm(", "a torch matrix multiply"),
        ("torch.einsum(", "a torch einsum"),
        ("torch.nn.functional", "a torch.nn.functional op"),
        ("F.linear(", "a torch.nn.functional op"),
        ("F.softmax(", "a torch.nn.functional op"),
        ("F.rms_norm(", "a torch.nn.functional op"),
        ("F.layer_norm(", "a torch.nn.functional op"),
        (
            "F.scaled_dot_product_attention(",
            "a torch.nn.functional op",
        ),
        ("torch.ops.", "a torch operator"),
        ("cublas", "cuBLAS"),
        ("triton", "Triton"),
        ("cupy", "CuPy"),
        (
            "data_ptr()",
            "a key from a tensor's address (a cache of results?)",
        ),
        ("lru_cache", "a memoizing decorator"),
        ("@cache", "a memoizing decorator"),
        ("threading", "a thread of its own"),
        ("multiprocessing", "a process of its own"),
        ("subprocess", "a process of its own"),
        ("os.fork(", "a process of its own"),
        ("os.setsid(", "a process of its own"),
    ];
    let mut signs = Vec::new();
    for line in diff.lines() {
        let Some(added) = line.strip_prefix('+').filter(|_| !line.starts_with("+++")) else {
            continue;
        };
        let code = added.split('#').next().unwrap_or("");
        let mut found: Vec<&str> = LIBRARY_CALLS
            .iter()
            .filter(|(needle, _)| code.contains(needle))
            .map(|(_, what)| *what)
            .collect();
        if code.contains(" @ ") && !code.trim_start().starts_with('@') {
            found.push("a matrix multiply by `@` (torch's, not a cuTile kernel)");
        }
        let module_level = !code.starts_with(char::is_whitespace);
        if module_level
            && (code.trim_end().ends_with("= {}") || code.trim_end().ends_with("= dict()"))
        {
            found.push("a module-level dict (a cache of results?)");
        }
        for what in found {
            let sign = format!("{what}: `{}`", added.trim());
            if !signs.contains(&sign) {
                signs.push(sign);
            }
        }
    }
    signs
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
        crate::records::RecordFile {
            format: crate::records::RecordFormat::Junit,
            text: format!(
                r#"<testsuite><testcase classname="t" name="test_perf[cutile]"><properties><property name="cutile_perf_census" value="{json}"/></properties></testcase></testsuite>"#
            ),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::CompiledKernel;

    /// An unseen-input run of `side` (offset 7) whose cases `t::test_a` and `t::test_b` passed or failed.
    fn unseen_run(side: &str, a: bool, b: bool) -> RunFile {
        let case = |name: &str, passed: bool| {
            let failure = if passed {
                ""
            } else {
                r#"<failure message="wrong"/>"#
            };
            format!(r#"<testcase classname="t" name="test_{name}">{failure}</testcase>"#)
        };
        RunFile::new(
            &unseen_run_name(7, side),
            records::RecordFile {
                format: records::RecordFormat::Junit,
                text: format!("<testsuite>{}{}</testsuite>", case("a", a), case("b", b)),
            },
        )
    }

    #[test]
    fn unseen_inputs_count_the_candidates_failures_that_the_baselines_code_does_not_share() {
        let failed = |runs: &[RunFile]| {
            unseen_failures(runs).map(|(offset, failed)| {
                assert_eq!(offset, 7);
                failed
            })
        };
        // none made; the candidate passing every case alone (the baseline's run is then not made)
        assert_eq!(failed(&[]), None);
        assert_eq!(failed(&[unseen_run("candidate", true, true)]), None);
        // a failure counts without the baseline's run, and with it only where the baseline's code passed
        let a = Some(vec!["t::test_a".to_string()]);
        assert_eq!(failed(&[unseen_run("candidate", false, true)]), a);
        let both = [
            unseen_run("candidate", false, false),
            unseen_run("baseline", true, false),
        ];
        assert_eq!(failed(&both), a);
        let shared = [
            unseen_run("candidate", false, true),
            unseen_run("baseline", false, true),
        ];
        assert_eq!(failed(&shared), None);
        // the baseline's run without the candidate's: the candidate's died
        assert_eq!(
            failed(&[unseen_run("baseline", true, true)]),
            Some(vec!["the run ended without a JUnit file".to_string()])
        );
    }

    fn census(launches: &[(&str, &str)], device: &[(&str, f64)], bytes: u64) -> Census {
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

    const KERNEL: &str = "src/tilegym/ops/cutile/rms_norm.py";

    fn allowed() -> Vec<String> {
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

    #[test]
    fn a_library_fallback_is_refused_with_what_ran_instead() {
        let baseline = [census(&[("mm_kernel", KERNEL)], &[("mm_kernel", 100.0)], 0)];
        let fallback = census(&[], &[("sm90_xmma_gemm_f16f16", 90.0), ("fill", 10.0)], 0);
        assert_eq!(
            share_refusal(&fallback, &baseline, &allowed()).unwrap(),
            "no cuTile kernel from the allowed paths ran in the timed call: 90% of GPU time in sm90_xmma_gemm_f16f16"
        );
    }

    #[test]
    fn a_share_below_the_baseline_s_less_the_slack_is_refused() {
        let baseline = [census(&[("k", KERNEL)], &[("k", 95.0), ("memset", 5.0)], 0)];
        let decoy = census(&[("k", KERNEL)], &[("k", 1.0), ("elementwise", 99.0)], 0);
        assert_eq!(
            share_refusal(&decoy, &baseline, &allowed()).unwrap(),
            "cuTile kernels from the allowed paths did 1% of the timed GPU work (baseline 95%): 99% of GPU time in elementwise"
        );
        let honest = census(&[("k", KERNEL)], &[("k", 88.0), ("memset", 12.0)], 0);
        assert_eq!(share_refusal(&honest, &baseline, &allowed()), None);
    }

    /// A census of kernel `k` (grid 132, once per call) whose harness called the function `calls` times
    /// and launched `k` with each of `grids` as often as given.
    fn timed(calls: u64, grids: &[(u64, u64)]) -> Census {
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
            }),
            ..census(&[("k", KERNEL)], &[("k", 100.0)], 0)
        }
    }

    #[test]
    fn launches_skipped_while_timed_are_refused_as_far_as_the_baseline_made_them_all() {
        let baseline = [timed(200, &[(132, 200)])];
        let skipped = |census: &Census| skipped_launches(census, &baseline, &allowed());
        assert_eq!(
            skipped(&timed(200, &[(132, 180)])).unwrap(),
            "the timed calls launched k 90% as often per call as the census's own call did (baseline \
             100%): launches skipped while timed"
        );
        // a decoy grid is not the census's launch
        assert!(skipped(&timed(200, &[(132, 100), (1, 100)])).is_some());
        // every call, or more (an autotuner's first call tries several), or a census without counts
        assert_eq!(skipped(&timed(200, &[(132, 200)])), None);
        assert_eq!(skipped(&timed(200, &[(132, 204)])), None);
        assert_eq!(skipped(&census(&[("k", KERNEL)], &[("k", 1.0)], 0)), None);
        // where the baseline's own timed calls launched it less often, the candidate is held to that
        let sparing = [timed(200, &[(132, 190)])];
        assert_eq!(
            skipped_launches(&timed(200, &[(132, 190)]), &sparing, &allowed()),
            None
        );
        assert!(skipped_launches(&timed(200, &[(132, 180)]), &sparing, &allowed()).is_some());
    }

    const SIGNED: &str = "stream=0 float16[4096,1024]/1024,1 16 1e-05";

    /// A census of kernel `k` whose call launched it with [`SIGNED`], and whose harness launched it with
    /// each of `signatures` as often as given.
    fn signed(signatures: &[(&str, u64)]) -> Census {
        let mut census = timed(200, &[]);
        census.launches[0].signatures = vec![SIGNED.into()];
        census.timed.as_mut().unwrap().launches = (signatures.iter())
            .map(|&(signature, count)| TimedLaunch {
                kernel: "k".into(),
                file: Some(KERNEL.into()),
                grid: vec![132],
                signature: Some(signature.into()),
                count,
            })
            .collect();
        census
    }

    #[test]
    fn arguments_other_than_the_census_call_s_are_refused_as_far_as_the_baseline_gave_them() {
        let baseline = [signed(&[(SIGNED, 200)])];
        let other = |census: &Census| other_arguments(census, &baseline, &allowed());
        let half = "stream=0 float16[2048,1024]/1024,1 16 1e-05";
        assert_eq!(
            other(&signed(&[(SIGNED, 100), (half, 100)])).unwrap(),
            "the timed calls gave k other arguments than the census's own call in 50% of its launches \
             (baseline 0%): argument 1 float16[2048,1024]/1024,1 (census float16[4096,1024]/1024,1)"
        );
        let stream = "stream=7 float16[4096,1024]/1024,1 16 1e-05";
        assert!(
            other(&signed(&[(stream, 200)]))
                .unwrap()
                .ends_with(": stream=7 (census stream=0)")
        );
        assert_eq!(other(&signed(&[(SIGNED, 200)])), None);
        // censuses without signatures, and a baseline whose own timed launches differed as much
        assert_eq!(other(&timed(200, &[(132, 200)])), None);
        let differing = [signed(&[(SIGNED, 100), (half, 100)])];
        assert_eq!(
            other_arguments(
                &signed(&[(SIGNED, 100), (half, 100)]),
                &differing,
                &allowed()
            ),
            None
        );
    }

    /// Outputs compared in `calls`, each equal or not (4 of 8 elements off by 0.5).
    fn outputs(deterministic: bool, calls: &[(u64, bool)]) -> Outputs {
        Outputs {
            seed: 7,
            why: None,
            deterministic,
            tolerance: Some(Tolerance {
                rtol: 0.01,
                atol: 0.01,
                source: "tests.common:get_dtype_tolerances(float16)".into(),
            }),
            compared: (calls.iter())
                .map(|&(call, equal)| Compared {
                    call,
                    equal,
                    max_abs: (!equal).then_some(0.5),
                    differing: if equal { 0 } else { 4 },
                    elements: 8,
                    why: None,
                })
                .collect(),
            poisoned: true,
            seconds: Some(0.01),
        }
    }

    #[test]
    fn outputs_other_than_the_census_call_s_are_refused_where_the_baseline_s_were_equal() {
        let with = |outputs: Outputs| Census {
            outputs: Some(outputs),
            ..timed(200, &[(132, 200)])
        };
        let baseline = [with(outputs(true, &[(17, true), (200, true)]))];
        let other = |census: &Census| other_outputs(census, &baseline);
        assert_eq!(
            other(&with(outputs(true, &[(17, false), (200, true)]))).unwrap(),
            "timed call 17 returned other output than the census's own call: 4 of 8 elements off, by \
             up to 5.000e-1 (held bit for bit, as two untimed calls agreed bit for bit)"
        );
        assert!(
            other(&with(outputs(false, &[(3, true), (200, false)])))
                .unwrap()
                .ends_with(
                    "(held within rtol 0.01, atol 0.01 (tests.common:get_dtype_tolerances(float16)))"
                )
        );
        assert_eq!(
            other(&with(outputs(true, &[(17, true), (200, true)]))),
            None
        );
        // a census older than the check, or a baseline whose own timed outputs differed (in place)
        assert_eq!(other(&timed(200, &[(132, 200)])), None);
        let in_place = [with(outputs(true, &[(200, false)]))];
        assert_eq!(
            other_outputs(&with(outputs(true, &[(200, false)])), &in_place),
            None
        );
    }

    #[test]
    fn runs_measured_with_other_harness_settings_are_refused() {
        let under = |cupti: bool| Census {
            harness: Some(BTreeMap::from([
                ("rep".to_string(), serde_json::json!(50.0)),
                ("use_cupti".to_string(), serde_json::json!(cupti)),
            ])),
            ..timed(200, &[])
        };
        assert_eq!(
            measured_differently(&[under(true)], &[under(true), under(false)]).unwrap(),
            "its runs measured with other harness settings: use_cupti=false in the baseline's, \
             use_cupti=true in the candidate's"
        );
        assert_eq!(measured_differently(&[under(true)], &[under(true)]), None);
        assert_eq!(
            measured_differently(&[timed(1, &[])], &[under(false)]),
            None
        );
        // and against the session's start, as `verify` holds each iteration's runs
        let start = harness_settings(&[run_with_census("benchmark-1", &under(true))]);
        let step = |cupti| [run_with_census("round-1-candidate", &under(cupti))];
        assert_eq!(
            settings_departure(&start, &step(false)).unwrap(),
            "t::test_perf[cutile] measured with use_cupti=false, the session's start with use_cupti=true"
        );
        assert_eq!(settings_departure(&start, &step(true)), None);
        let older = [run_with_census("round-1-candidate", &timed(1, &[]))];
        assert_eq!(settings_departure(&start, &older), None);
    }

    #[test]
    fn shortcut_signs_name_what_the_change_adds() {
        let diff = "+++ b/src/k.py\n+_MEMO = {}\n+    key = (x.data_ptr(), mode)\n-    y = a @ b\n+    return a @ b  # fast\n+    z = torch.matmul(a, b)\n+@ct.kernel\n+    # torch.mm( in a comment\n";
        assert_eq!(
            shortcut_signs(diff),
            [
                "a module-level dict (a cache of results?): `_MEMO = {}`",
                "a key from a tensor's address (a cache of results?): `key = (x.data_ptr(), mode)`",
                "a matrix multiply by `@` (torch's, not a cuTile kernel): `return a @ b  # fast`",
                "a torch matrix multiply: `z = torch.matmul(a, b)`",
            ]
        );
        assert_eq!(
            shortcut_signs("+import threading\n+    subprocess.Popen(['burn'])\n"),
            [
                "a thread of its own: `import threading`",
                "a process of its own: `subprocess.Popen(['burn'])`",
            ]
        );
        assert!(shortcut_signs("+    TILE_SIZE = 256\n").is_empty());
    }

    /// The first round's run of one side, whose one perf case launched `kernel` on `grid` and ran
    /// `device`, with `dumped` kernel modules (blob, compiled name).
    fn first_round(
        side: &str,
        kernel: &str,
        grid: u64,
        device: Option<&str>,
        dumped: &[(&str, &str)],
    ) -> RunFile {
        let mut census = census(&[(kernel, KERNEL)], &[], 100);
        census.launches[0].grids = vec![vec![grid]];
        census.device = device.map(|name| {
            vec![DeviceTime {
                name: name.into(),
                us: 1.0,
            }]
        });
        RunFile {
            compiled: Some(
                dumped
                    .iter()
                    .map(|(blob, entry)| CompiledKernel {
                        blob: blob.to_string(),
                        entries: vec![entry.to_string()],
                    })
                    .collect(),
            ),
            ..run_with_census(&format!("round-1-{side}"), &census)
        }
    }

    const SIGNATURE: &str = "k_Kt1_A1f16_1l0_I128";
    const DEVICE: &str = "k_Kt1_A1f16_1l0_I128";

    #[test]
    fn the_two_sides_autotuned_picks_are_recorded_and_do_not_make_them_differ() {
        let census: Census = serde_json::from_str(
            r#"{"taken": true, "launches": [{"kernel": "k", "file": "k.py", "grids": [[8]], "count": 2,
                "hints": [{"occupancy": 7, "opt_level": 3}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            census.launches[0].hints,
            [BTreeMap::from([
                ("occupancy".to_string(), serde_json::json!(7)),
                ("opt_level".to_string(), serde_json::json!(3)),
            ])]
        );
        let picked = |side, occupancy: u32| {
            let mut run = first_round(side, "k", 8, Some(DEVICE), &[("b1", SIGNATURE)]);
            let mut census = census.clone();
            census.launches[0].hints[0].insert("occupancy".into(), occupancy.into());
            census.device = Some(vec![DeviceTime {
                name: DEVICE.into(),
                us: 1.0,
            }]);
            run.records = run_with_census("round-1", &census).records;
            run
        };
        assert_eq!(
            alike(&[picked("candidate", 7), picked("baseline", 9)]),
            Ok(())
        );
    }

    #[test]
    fn no_change_needs_the_same_dumps_launches_and_gpu_kernels_on_both_sides() {
        let same = |side| first_round(side, "k", 8, Some(DEVICE), &[("b1", SIGNATURE)]);
        assert_eq!(alike(&[same("candidate"), same("baseline")]), Ok(()));
        let why = |candidate: RunFile| alike(&[candidate, same("baseline")]).unwrap_err();
        assert_eq!(
            why(first_round(
                "candidate",
                "k",
                8,
                Some(DEVICE),
                &[("b2", SIGNATURE)]
            )),
            "k_Kt1_A1f16_1l0_I128 compiled to other Tile IR (candidate b2, baseline b1)"
        );
        assert_eq!(
            why(first_round(
                "candidate",
                "k",
                16,
                Some(DEVICE),
                &[("b1", SIGNATURE)]
            )),
            "t::test_perf[cutile]: the cuTile launches differ (candidate: k grids [[16]] x1, baseline: k grids [[8]] x1)"
        );
        assert_eq!(
            why(first_round(
                "candidate",
                "k",
                8,
                Some("elementwise"),
                &[("b1", SIGNATURE)]
            )),
            "t::test_perf[cutile]: the GPU kernels differ (candidate: elementwise, baseline: k_Kt1_A1f16_1l0_I128)"
        );
        // another signature of the same function (a constant changed): nothing to compare it with
        assert_eq!(
            why(first_round(
                "candidate",
                "k",
                8,
                Some(DEVICE),
                &[("b1", "k_Kt1_A1f16_1l0_I256")]
            )),
            "k: no signature compiled on both sides (candidate: k_Kt1_A1f16_1l0_I256, baseline: k_Kt1_A1f16_1l0_I128)"
        );
        // the baseline's run alone, or a run without dumps
        assert_eq!(
            alike(&[same("baseline")]).unwrap_err(),
            "no dumps of the candidate's code"
        );
        assert!(!unchanged(&[
            RunFile {
                compiled: None,
                ..same("candidate")
            },
            same("baseline")
        ]));
    }

    #[test]
    fn a_signature_only_one_side_compiled_is_not_compared() {
        // the candidate's correctness run compiled a float32 signature too, in the same worker
        let baseline = first_round("baseline", "k", 8, Some(DEVICE), &[("b1", SIGNATURE)]);
        let candidate = first_round(
            "candidate",
            "k",
            8,
            Some(DEVICE),
            &[("b1", SIGNATURE), ("b9", "k_Kt1_A1f32_1l0_I128")],
        );
        assert_eq!(alike(&[candidate, baseline]), Ok(()));
    }

    #[test]
    fn a_longer_function_s_dump_is_not_the_launched_kernel_s() {
        // `k` launched, and only `k_twice` dumped (a prefix of the text, not of the signature)
        let other = |side| first_round(side, "k", 8, Some(DEVICE), &[("b1", "k_twice_Kt1_I8")]);
        assert_eq!(
            alike(&[other("candidate"), other("baseline")]).unwrap_err(),
            "the candidate's run round-1-candidate: k was launched but no dump of it was found"
        );
        // the census's Python name is never matched by a shorter dumped name either
        let short = |side| first_round(side, "k_twice", 8, Some(DEVICE), &[("b1", "k_Kt1_I8")]);
        assert!(!unchanged(&[short("candidate"), short("baseline")]));
    }

    #[test]
    fn what_is_missing_is_never_the_same() {
        let blind = |side| first_round(side, "k", 8, None, &[("b1", SIGNATURE)]);
        assert_eq!(
            alike(&[blind("candidate"), blind("baseline")]).unwrap_err(),
            "the candidate's run round-1-candidate: t::test_perf[cutile]: no GPU times"
        );
        let nothing = |side| RunFile {
            compiled: Some(Vec::new()),
            ..blind(side)
        };
        assert!(!unchanged(&[nothing("candidate"), nothing("baseline")]));
    }

    #[test]
    fn older_notes_with_compile_runs_of_their_own_are_read_alike() {
        let compile_run = |side: &str| RunFile {
            name: format!("compile-{side}"),
            ..first_round(side, "k", 8, Some(DEVICE), &[("b1", "k")])
        };
        assert!(unchanged(&[
            compile_run("candidate"),
            compile_run("baseline")
        ]));
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
