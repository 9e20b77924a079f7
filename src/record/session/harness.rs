//! How the benchmark harness measures, as the environment chooses it. TileGym's test configuration reads
//! its harness's defaults from environment variables: `CUPTI` (on by default: each timed call's GPU
//! kernels summed by the profiler, host work unseen), `CUDAGRAPH` (the calls replayed from a CUDA graph,
//! timed by events), the repetitions (`WARMUP`, `REP`, `MIN_REP`, `MAX_REP`, `INITIAL_REP`, `MODE`) and
//! the shapes and hyper-parameters (`PARAMS`, `CONFIG`); `CUTILE_PERF_HARNESS` names the harness function
//! the census wraps, `tests.common:benchmark` where unset. A session
//! records the ones set at `start`; a step in an environment that sets them otherwise would measure
//! differently from the baseline it is compared with, and is refused before it runs.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Result, bail};

/// The variables that change how TileGym's harness measures (`tests/config.py` reads all but the
/// last): `MAX_REP` bounds the repetitions, `PARAMS` and `CONFIG` pick shapes and hyper-parameters; the
/// last names the harness function the census wraps.
pub const VARIABLES: &[&str] = &[
    "CUPTI",
    "CUDAGRAPH",
    "WARMUP",
    "REP",
    "MIN_REP",
    "MAX_REP",
    "INITIAL_REP",
    "MODE",
    "PARAMS",
    "CONFIG",
    HARNESS_VARIABLE,
];

/// The variable that names the harness function the census wraps (`module:function`), and the one it
/// wraps where it is not set.
pub const HARNESS_VARIABLE: &str = "CUTILE_PERF_HARNESS";
pub const DEFAULT_HARNESS: &str = "tests.common:benchmark";

/// Those of [`VARIABLES`] that TileGym reads as a yes or no (`0`, `false`, `no` and empty are no).
const SWITCHES: &[&str] = &["CUPTI", "CUDAGRAPH"];

/// The harness variables an environment sets, a switch as `0` or `1`; none set: the harness's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct HarnessMode(pub BTreeMap<String, String>);

/// What the trailer says where no harness variable is set.
const DEFAULTS: &str = "defaults";

impl HarnessMode {
    /// The mode `lookup` (a variable's value, where set) gives.
    pub fn of(lookup: impl Fn(&str) -> Option<String>) -> HarnessMode {
        HarnessMode(
            VARIABLES
                .iter()
                .filter_map(|name| {
                    let value = lookup(name)?;
                    let value = match SWITCHES.contains(name) {
                        true => switch(&value).to_string(),
                        false => value,
                    };
                    Some((name.to_string(), value))
                })
                .collect(),
        )
    }

    /// The mode of this process's environment, which the pytest processes it starts inherit.
    pub fn now() -> HarnessMode {
        HarnessMode::of(|name| std::env::var(name).ok())
    }

    /// The harness function the census wraps in this mode.
    pub fn harness(&self) -> String {
        (self.0.get(HARNESS_VARIABLE).cloned()).unwrap_or_else(|| DEFAULT_HARNESS.to_string())
    }

    /// As a trailer holds it: `CUPTI=0 REP=200`, or `defaults`; a space or `%` in a value (a `CONFIG`
    /// of several words) as `%20` or `%25`.
    pub fn encode(&self) -> String {
        if self.0.is_empty() {
            return DEFAULTS.to_string();
        }
        let escaped = |value: &str| value.replace('%', "%25").replace(' ', "%20");
        let set: Vec<String> = (self.0.iter())
            .map(|(n, v)| format!("{n}={}", escaped(v)))
            .collect();
        set.join(" ")
    }

    pub fn decode(text: &str) -> Result<HarnessMode> {
        if text == DEFAULTS {
            return Ok(HarnessMode::default());
        }
        let mut set = BTreeMap::new();
        for pair in text.split(' ') {
            match pair.split_once('=') {
                Some((name, value)) if VARIABLES.contains(&name) => set.insert(
                    name.to_string(),
                    value.replace("%20", " ").replace("%25", "%"),
                ),
                _ => bail!("bad harness setting {pair:?} in {text:?}"),
            };
        }
        Ok(HarnessMode(set))
    }

    /// How `other` differs from this mode, variable by variable (`CUPTI=0 here, unset at start`).
    pub fn departures(&self, other: &HarnessMode, here: &str, there: &str) -> Vec<String> {
        let shown = |mode: &HarnessMode, name: &str| {
            mode.0
                .get(name)
                .map_or("unset".to_string(), |v| format!("{name}={v}"))
        };
        VARIABLES
            .iter()
            .filter(|name| self.0.get(**name) != other.0.get(**name))
            .map(|name| {
                format!(
                    "{} {here}, {} {there}",
                    shown(other, name),
                    shown(self, name)
                )
            })
            .collect()
    }
}

/// TileGym's reading of a yes-or-no variable.
fn switch(value: &str) -> &'static str {
    match value.to_lowercase().as_str() {
        "0" | "false" | "no" | "" => "0",
        _ => "1",
    }
}

impl fmt::Display for HarnessMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return write!(
                f,
                "none of {} set (the harness's defaults)",
                VARIABLES.join(", ")
            );
        }
        let set: Vec<String> = self.0.iter().map(|(n, v)| format!("{n}={v}")).collect();
        write!(f, "{}", set.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(set: &[(&str, &str)]) -> HarnessMode {
        let set: BTreeMap<&str, &str> = set.iter().copied().collect();
        HarnessMode::of(|name| set.get(name).map(|v| v.to_string()))
    }

    #[test]
    fn a_mode_reads_the_harness_variables_as_tilegym_does_and_round_trips() {
        let cupti_off = mode(&[("CUPTI", "false"), ("REP", "200"), ("HOME", "/h")]);
        assert_eq!(cupti_off.encode(), "CUPTI=0 REP=200");
        assert_eq!(mode(&[("CUPTI", "no")]), mode(&[("CUPTI", "0")]));
        assert_eq!(mode(&[("CUDAGRAPH", "yes")]).encode(), "CUDAGRAPH=1");
        let worded = mode(&[("CONFIG", "m=4096 n=1%"), ("CUTILE_PERF_HARNESS", "t:b")]);
        assert_eq!(
            worded.encode(),
            "CONFIG=m=4096%20n=1%25 CUTILE_PERF_HARNESS=t:b"
        );
        assert_eq!(worded.harness(), "t:b");
        assert_eq!(cupti_off.harness(), DEFAULT_HARNESS);
        for m in [cupti_off.clone(), worded, HarnessMode::default()] {
            assert_eq!(HarnessMode::decode(&m.encode()).unwrap(), m);
        }
        assert_eq!(HarnessMode::default().encode(), "defaults");
        assert!(HarnessMode::decode("PATH=/bin").is_err());
        assert_eq!(
            HarnessMode::default().departures(&cupti_off, "here", "at start"),
            [
                "CUPTI=0 here, unset at start",
                "REP=200 here, unset at start"
            ]
        );
    }
}
