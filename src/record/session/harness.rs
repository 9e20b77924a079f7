//! How the benchmark harness measures, as the environment chooses it. TileGym's test configuration reads
//! its harness's defaults from environment variables: `CUPTI` (on by default: each timed call's GPU
//! kernels summed by the profiler, host work unseen), `CUDAGRAPH` (the calls replayed from a CUDA graph,
//! timed by events), the repetitions (`WARMUP`, `REP`, `MIN_REP`, `MAX_REP`, `INITIAL_REP`, `MODE`) and
//! the shapes, hyper-parameters and input values (`PARAMS`, `CONFIG`, `SEED`, `LOAD`, `LOAD_DIR`,
//! `LOAD_NAMES`); `CUTILE_PERF_HARNESS` names the harness function
//! the census wraps, `tests.common:benchmark` where unset. A session
//! records the ones set at `start`; a step in an environment that sets them otherwise would measure
//! differently from the baseline it is compared with, and is refused before it runs.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Result, bail};

use crate::rules::trailers::{encode_word, split_word};

/// The variables that change how TileGym's harness measures or what it measures on (`tests/config.py`
/// reads all but the last; its others, such as `QUIET`, `DUMP` or `CSV`, change only what it prints):
/// `MAX_REP` bounds the repetitions where a checkout has it, `PARAMS` and `CONFIG` pick shapes and
/// hyper-parameters, `SEED` and `LOAD*` the input values; the last names the harness function the
/// census wraps.
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
    "SEED",
    "LOAD",
    "LOAD_DIR",
    "LOAD_NAMES",
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

    /// As a trailer holds it: `CUPTI=0 REP=200`, or `defaults`. A value is the environment's text, so
    /// one with a space, a quote or nothing in it is quoted (`REP="200 ms"`): it cannot spell a
    /// setting that was not set.
    pub fn encode(&self) -> String {
        if self.0.is_empty() {
            return DEFAULTS.to_string();
        }
        let set: Vec<String> = self
            .0
            .iter()
            .map(|(name, value)| format!("{name}={}", encode_word(value)))
            .collect();
        set.join(" ")
    }

    pub fn decode(text: &str) -> Result<HarnessMode> {
        if text == DEFAULTS {
            return Ok(HarnessMode::default());
        }
        let mut set = BTreeMap::new();
        let mut rest = text;
        while !rest.is_empty() {
            let name = match rest.split_once('=') {
                Some((name, after)) if VARIABLES.contains(&name) => {
                    rest = after;
                    name
                }
                _ => bail!("bad harness setting at {rest:?} in {text:?}"),
            };
            let (value, after) = split_word(rest)?;
            if set.insert(name.to_string(), value).is_some() {
                bail!("harness setting {name} appears twice in {text:?}");
            }
            rest = after;
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
            r#"CONFIG="m=4096 n=1%" CUTILE_PERF_HARNESS=t:b"#
        );
        assert_eq!(worded.harness(), "t:b");
        assert_eq!(cupti_off.harness(), DEFAULT_HARNESS);
        for m in [cupti_off.clone(), worded, HarnessMode::default()] {
            assert_eq!(HarnessMode::decode(&m.encode()).unwrap(), m);
        }
        assert_eq!(HarnessMode::default().encode(), "defaults");
        assert!(HarnessMode::decode("PATH=/bin").is_err());
        // values with spaces, quotes or nothing round-trip, and never spell a setting of their own
        let odd = mode(&[("REP", "200 CUPTI=1"), ("WARMUP", ""), ("MODE", "\"x y")]);
        assert_eq!(odd.encode(), r#"MODE="\"x y" REP="200 CUPTI=1" WARMUP="""#);
        assert_eq!(HarnessMode::decode(&odd.encode()).unwrap(), odd);
        let spaced = mode(&[("REP", "200 ms")]);
        let field = crate::rules::trailers::encode_field(&spaced.encode());
        let read = crate::rules::trailers::decode_field(&field).unwrap();
        assert_eq!(HarnessMode::decode(&read).unwrap(), spaced);
        assert_eq!(
            HarnessMode::default().departures(&cupti_off, "here", "at start"),
            [
                "CUPTI=0 here, unset at start",
                "REP=200 here, unset at start"
            ]
        );
    }
}
