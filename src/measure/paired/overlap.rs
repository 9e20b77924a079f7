//! How a step's worker start-ups overlap its work, as the step's environment sets it: the settings a GPU
//! compares on null steps (`tools/gpu-step-cost.sh`), each documented in `docs/measurement.md`.

/// The variable that names the first round whose sides start the next round's workers as they measure.
const STAND_BY_FROM_ROUND: &str = "CUTILE_PERF_STAND_BY_FROM_ROUND";
/// The variable that, `0`, has a round's new workers make their GPU contexts one after the other.
const READY_TOGETHER: &str = "CUTILE_PERF_READY_TOGETHER";
/// The variable that, `1`, has a worker started ahead make its GPU context as soon as it has collected.
const STAND_BY_AT_ONCE: &str = "CUTILE_PERF_STAND_BY_AT_ONCE";

/// The start-up overlap of one step's rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// The first round whose sides start the next round's workers as they measure: the first, or the
    /// one [`STAND_BY_FROM_ROUND`] names (`2`: every first round measured beside no start-up).
    pub stand_by_from_round: usize,
    /// Whether a round's new workers are let go together and waited for together (both start-ups, GPU
    /// contexts among them, side by side while nothing measures), rather than one after the other in the
    /// round's order (`CUTILE_PERF_READY_TOGETHER=0`).
    pub ready_together: bool,
    /// Whether a worker started ahead makes its GPU context and warms up as soon as it has collected,
    /// beside its own side's measurement (`CUTILE_PERF_STAND_BY_AT_ONCE=1`), rather than when its round
    /// lets it go.
    pub stand_by_at_once: bool,
}

impl Overlap {
    /// The overlap the step's environment asks for; what it does not set, or sets to something else, is
    /// the default.
    pub fn from_env() -> Overlap {
        Overlap::from(|name| std::env::var(name).ok())
    }

    fn from(var: impl Fn(&str) -> Option<String>) -> Overlap {
        let value = |name| var(name).map(|value| value.trim().to_string());
        Overlap {
            stand_by_from_round: value(STAND_BY_FROM_ROUND)
                .and_then(|round| round.parse().ok())
                .filter(|&round| round >= 1)
                .unwrap_or(1),
            ready_together: value(READY_TOGETHER).is_none_or(|on| on != "0"),
            stand_by_at_once: value(STAND_BY_AT_ONCE).is_some_and(|on| on == "1"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &[(&str, &str)]) -> Overlap {
        Overlap::from(|name| {
            (vars.iter())
                .find(|(set, _)| *set == name)
                .map(|(_, value)| value.to_string())
        })
    }

    #[test]
    fn unset_the_pair_stands_by_from_round_one_and_is_ready_together_when_its_round_begins() {
        let default = Overlap {
            stand_by_from_round: 1,
            ready_together: true,
            stand_by_at_once: false,
        };
        assert_eq!(with(&[]), default);
        // what is not a setting's value leaves the default
        let odd = [
            (STAND_BY_FROM_ROUND, "0"),
            (READY_TOGETHER, "no"),
            (STAND_BY_AT_ONCE, "yes"),
        ];
        assert_eq!(with(&odd), default);
        let set = [
            (STAND_BY_FROM_ROUND, " 2"),
            (READY_TOGETHER, "0"),
            (STAND_BY_AT_ONCE, "1"),
        ];
        assert_eq!(
            with(&set),
            Overlap {
                stand_by_from_round: 2,
                ready_together: false,
                stand_by_at_once: true,
            }
        );
    }
}
