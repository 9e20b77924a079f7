//! How a step's worker start-ups overlap its work, and whether a candidate alike to its baseline is
//! measured past its first round, as the step's environment sets it: the settings a GPU compares on null
//! steps (`tools/gpu-step-cost.sh`), each documented in `docs/measurement.md`.

use crate::rules::verdict;
use crate::system::runner::Workers;
use crate::system::workers::spare::MOST_SPARES;

/// The variable that names the first round whose sides start the next round's workers as they measure,
/// or `0`: as the step begins, beside the candidate's correctness run.
const STAND_BY_FROM_ROUND: &str = "CUTILE_PERF_STAND_BY_FROM_ROUND";
/// The variable that, `1`, has a round's new workers make their GPU contexts at the same time.
const READY_TOGETHER: &str = "CUTILE_PERF_READY_TOGETHER";
/// The variable that, `1`, has a worker started ahead make its GPU context as soon as it has collected.
const STAND_BY_AT_ONCE: &str = "CUTILE_PERF_STAND_BY_AT_ONCE";
/// The variable that, `1`, has a candidate that compiled and launched what its baseline does measured in
/// more rounds anyway, as a null step for comparing the other settings.
const REROLL_ALIKE: &str = "CUTILE_PERF_REROLL_ALIKE";
/// The variable that names how many rounds ahead each side's workers are started, at most.
const STAND_BY_ROUNDS: &str = "CUTILE_PERF_STAND_BY_ROUNDS";
/// The variable that names how many spares a step that keeps its baseline's worker starts for the next
/// step's workers, `0` to [`crate::system::workers::spare::MOST_SPARES`].
const SPARES: &str = "CUTILE_PERF_SPARES";
/// The variable that, `0`, has the spares started only after the step, not also as each round begins.
const REFILL_SPARES: &str = "CUTILE_PERF_REFILL_SPARES";
/// The most rounds ahead [`STAND_BY_ROUNDS`] may ask for: each is a process a side that imports and
/// collects beside the measurements.
const MOST_ROUNDS_AHEAD: usize = 4;
/// The fewest CPUs on which the next rounds' workers start as the step begins and go before their
/// rounds: two for the step's own workers and two for a round ahead.
const CPUS_TO_START_AHEAD: usize = 4;

/// How one step's rounds are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `0`, unset: the workers of the next rounds start as the step begins, while nothing measures,
    /// beside the candidate's first start-up and correctness, so that they are ready when their rounds
    /// come (on an H100 round 2 to 5 then waited 0.2 s each, against 11-15 s). Else the first round whose
    /// sides start the next round's workers as they measure ([`STAND_BY_FROM_ROUND`]: `1`, round 1; `2`,
    /// every first round measured beside no start-up).
    pub stand_by_from_round: usize,
    /// Whether a round's new workers are let go together and waited for together (both start-ups, GPU
    /// contexts among them, side by side while nothing measures: `CUTILE_PERF_READY_TOGETHER=1`), rather
    /// than one after the other in the round's order. Off: on an H100 a round waited as long either way
    /// (its stood-by workers were still importing), so the order that was measured stays.
    pub ready_together: bool,
    /// Whether a worker started ahead makes its GPU context and warms up before its round comes: those
    /// started as the step begins once the candidate's first worker is ready, those started later as
    /// soon as they have collected, beside their own side's measurement (held while the other side
    /// measures). `CUTILE_PERF_STAND_BY_AT_ONCE=0`: when its round lets it go, which then waits for it.
    pub stand_by_at_once: bool,
    /// How many rounds ahead each side's workers are started, at most (`CUTILE_PERF_STAND_BY_ROUNDS`, 1
    /// to [`MOST_ROUNDS_AHEAD`], the default): a step that needs several rounds finds each one's pair
    /// ready, while one decided in its first ends those it started (`timings.started_unused`).
    pub stand_by_rounds: usize,
    /// Whether a candidate alike to its baseline after the first round is measured in more rounds
    /// anyway (`CUTILE_PERF_REROLL_ALIKE=1`), as any other, rather than decided on that round.
    pub reroll_alike: bool,
    /// How many spares a step that keeps its baseline's worker starts for the next step
    /// (`CUTILE_PERF_SPARES`): their interpreters, imports, GPU contexts and profilers are ready between
    /// steps, each holding about as much GPU memory as a worker. By default none on a machine with few
    /// CPUs, else one for the candidate's first worker and two for each round whose pair starts with
    /// the step.
    pub spares: usize,
    /// Whether the spares are topped up as each round begins, not only once the step is recorded, so
    /// that the workers of the rounds past those the spares covered are made of spares too: a spare
    /// runs none of either side's code, so it is not held while a side measures, and is ready sooner
    /// than a worker held half the time. On by default where spares are (`CUTILE_PERF_REFILL_SPARES=0`
    /// turns it off): null steps on an H100 measured the rounds alike with it and without it.
    pub refill_spares: bool,
}

impl Settings {
    /// The overlap the step's environment asks for; what it does not set, or sets to something else, is
    /// the default.
    pub fn from_env() -> Settings {
        Settings::for_workers(Workers::Lasting)
    }

    /// The settings for a step whose workers run as `workers` says: on this machine, by its CPUs; on
    /// another's (a Slurm job's node), whose CPUs this machine cannot tell, as on a machine with few.
    pub fn for_workers(workers: Workers) -> Settings {
        let cpus = match workers {
            Workers::Lasting => {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            }
            _ => 1,
        };
        Settings::from(|name| std::env::var(name).ok(), cpus)
    }

    /// The settings `var` gives, on a machine that runs `cpus` processes at once. Workers started ahead
    /// import beside the step's own two: each round ahead takes two CPUs more, and a machine with fewer
    /// than [`CPUS_TO_START_AHEAD`] starts only the next round's pair, as its round's sides measure.
    fn from(var: impl Fn(&str) -> Option<String>, cpus: usize) -> Settings {
        let value = |name| var(name).map(|value| value.trim().to_string());
        let roomy = cpus >= CPUS_TO_START_AHEAD;
        let mut settings = Settings {
            stand_by_from_round: value(STAND_BY_FROM_ROUND)
                .and_then(|round| round.parse().ok())
                .unwrap_or(if roomy { 0 } else { 1 }),
            ready_together: value(READY_TOGETHER).is_some_and(|on| on == "1"),
            stand_by_at_once: match value(STAND_BY_AT_ONCE).as_deref() {
                Some("1") => true,
                Some("0") => false,
                _ => roomy,
            },
            stand_by_rounds: value(STAND_BY_ROUNDS)
                .and_then(|rounds| rounds.parse().ok())
                .filter(|rounds| (1..=MOST_ROUNDS_AHEAD).contains(rounds))
                .unwrap_or((cpus.saturating_sub(2) / 2).clamp(1, MOST_ROUNDS_AHEAD)),
            reroll_alike: value(REROLL_ALIKE).is_some_and(|on| on == "1"),
            spares: 0,
            refill_spares: match value(REFILL_SPARES).as_deref() {
                Some("1") => true,
                Some("0") => false,
                _ => roomy,
            },
        };
        settings.spares = value(SPARES)
            .and_then(|count| count.parse().ok())
            .filter(|count| *count <= MOST_SPARES)
            .unwrap_or(match roomy {
                false => 0,
                true => 1 + 2 * settings.rounds_ahead_of_correctness(),
            });
        settings
    }

    /// How many rounds ahead the sides of round `number` start workers as they measure: none before
    /// the first round standing by or in the last round there can be; else the next round's, and up to
    /// [`Settings::stand_by_rounds`] where as many more rounds are left and `fitting` (how many rounds
    /// after this one the budget fits, by the rounds so far; none: not known yet) says they fit.
    pub fn rounds_ahead(&self, number: usize, fitting: Option<usize>) -> usize {
        if number < self.stand_by_from_round || number >= verdict::MAX_ROUNDS {
            return 0;
        }
        (self.stand_by_rounds)
            .min(verdict::MAX_ROUNDS - number)
            .min(fitting.unwrap_or(1))
            .max(1)
    }

    /// How many rounds' workers each side starts as the step begins, before correctness (round 1 is
    /// served by the step's first workers): none unless [`STAND_BY_FROM_ROUND`] is `0`; then round 2's,
    /// and as many after it as [`Settings::stand_by_rounds`] asks. No round's cost is known yet, so
    /// only that setting asks for more than the next one.
    pub fn rounds_ahead_of_correctness(&self) -> usize {
        match self.stand_by_from_round {
            0 => (self.stand_by_rounds).min(verdict::MAX_ROUNDS - 1),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings `vars` give on a GPU node of 16 CPUs.
    fn with(vars: &[(&str, &str)]) -> Settings {
        on(16, vars)
    }

    fn on(cpus: usize, vars: &[(&str, &str)]) -> Settings {
        let var = |name: &str| {
            (vars.iter())
                .find(|(set, _)| *set == name)
                .map(|(_, value)| value.to_string())
        };
        Settings::from(var, cpus)
    }

    #[test]
    fn a_machine_with_few_cpus_starts_only_the_next_rounds_pair_as_its_round_measures() {
        let few = Settings {
            stand_by_from_round: 1,
            ready_together: false,
            stand_by_at_once: false,
            stand_by_rounds: 1,
            reroll_alike: false,
            spares: 0,
            refill_spares: false,
        };
        assert_eq!(on(2, &[]), few);
        assert_eq!(on(3, &[]), few);
        assert_eq!(on(4, &[]).stand_by_rounds, 1);
        assert_eq!(on(4, &[]).stand_by_from_round, 0);
        assert_eq!(on(8, &[]).stand_by_rounds, 3);
        assert_eq!(on(64, &[]).stand_by_rounds, MOST_ROUNDS_AHEAD);
        // what the environment sets holds on any machine
        let set = [
            (STAND_BY_FROM_ROUND, "0"),
            (STAND_BY_ROUNDS, "2"),
            (STAND_BY_AT_ONCE, "1"),
            (SPARES, "1"),
            (REFILL_SPARES, "1"),
        ];
        assert_eq!(on(2, &set), on(16, &set));
    }

    #[test]
    fn unset_four_rounds_stand_by_from_the_steps_start_and_go_before_their_rounds() {
        let default = Settings {
            stand_by_from_round: 0,
            ready_together: false,
            stand_by_at_once: true,
            stand_by_rounds: MOST_ROUNDS_AHEAD,
            reroll_alike: false,
            spares: MOST_SPARES,
            refill_spares: true,
        };
        assert_eq!(with(&[]), default);
        // a spare for the candidate's first worker, and a pair for each round that starts with the step
        assert_eq!(on(4, &[]).spares, 3);
        assert_eq!(on(8, &[]).spares, 7);
        assert_eq!(with(&[(STAND_BY_ROUNDS, "1")]).spares, 3);
        assert_eq!(with(&[(STAND_BY_ROUNDS, "2")]).spares, 5);
        assert_eq!(with(&[(STAND_BY_FROM_ROUND, "1")]).spares, 1);
        assert_eq!(with(&[(SPARES, "9")]).spares, MOST_SPARES);
        // what is not a setting's value leaves the default
        let odd = [
            (STAND_BY_FROM_ROUND, "-1"),
            (READY_TOGETHER, "no"),
            (STAND_BY_AT_ONCE, "yes"),
            (STAND_BY_ROUNDS, "5"),
            (REROLL_ALIKE, "yes"),
            (SPARES, "10"),
            (REFILL_SPARES, "no"),
        ];
        assert_eq!(with(&odd), default);
        let set = [
            (STAND_BY_FROM_ROUND, " 2"),
            (READY_TOGETHER, "1"),
            (STAND_BY_AT_ONCE, "0"),
            (STAND_BY_ROUNDS, "3"),
            (REROLL_ALIKE, "1"),
            (SPARES, "0"),
            (REFILL_SPARES, "0"),
        ];
        assert_eq!(
            with(&set),
            Settings {
                stand_by_from_round: 2,
                ready_together: true,
                stand_by_at_once: false,
                stand_by_rounds: 3,
                reroll_alike: true,
                spares: 0,
                refill_spares: false,
            }
        );
    }

    #[test]
    fn workers_stand_by_as_many_rounds_ahead_as_are_left_and_the_budget_fits() {
        let deep = with(&[(STAND_BY_ROUNDS, "3")]);
        // round 1 knows no round's cost yet: the next round's pair only
        assert_eq!(deep.rounds_ahead(1, None), 1);
        assert_eq!(deep.rounds_ahead(2, Some(5)), 3);
        assert_eq!(deep.rounds_ahead(2, Some(2)), 2);
        // the next round's pair stands by even where the budget may not fit it, as with one round ahead
        assert_eq!(deep.rounds_ahead(2, Some(0)), 1);
        assert_eq!(deep.rounds_ahead(verdict::MAX_ROUNDS - 2, Some(5)), 2);
        assert_eq!(deep.rounds_ahead(verdict::MAX_ROUNDS, Some(5)), 0);
        assert_eq!(with(&[]).rounds_ahead(2, Some(5)), MOST_ROUNDS_AHEAD);
        assert_eq!(with(&[(STAND_BY_ROUNDS, "1")]).rounds_ahead(2, Some(5)), 1);
        let later = with(&[(STAND_BY_FROM_ROUND, "2"), (STAND_BY_ROUNDS, "2")]);
        assert_eq!(later.rounds_ahead(1, None), 0);
        assert_eq!(later.rounds_ahead(2, Some(3)), 2);
    }

    #[test]
    fn from_the_correctness_run_the_next_rounds_workers_start_before_correctness_unless_asked_not_to()
     {
        // by default the next four rounds' workers; from any round, nothing starts before correctness
        assert_eq!(with(&[]).rounds_ahead_of_correctness(), MOST_ROUNDS_AHEAD);
        assert_eq!(
            with(&[(STAND_BY_FROM_ROUND, "1"), (STAND_BY_ROUNDS, "3")])
                .rounds_ahead_of_correctness(),
            0
        );
        let early = with(&[(STAND_BY_FROM_ROUND, "0"), (STAND_BY_ROUNDS, "1")]);
        assert_eq!(early.stand_by_from_round, 0);
        assert_eq!(early.rounds_ahead_of_correctness(), 1);
        // round 1 then keeps to the next round's pair, which already stands by
        assert_eq!(early.rounds_ahead(1, None), 1);
        let deep = with(&[(STAND_BY_FROM_ROUND, "0"), (STAND_BY_ROUNDS, "3")]);
        assert_eq!(deep.rounds_ahead_of_correctness(), 3);
        assert_eq!(deep.rounds_ahead(2, Some(1)), 1);
    }

    #[test]
    fn every_setting_the_tool_reads_ends_no_warm_worker() {
        let ends_none = crate::system::workers::lasting::TOOL_SETTINGS;
        // each variable this file defines, a setting added later included, and those read elsewhere
        let here = include_str!("settings.rs");
        let defined = ": &str = \"";
        let named = (here.match_indices(defined)).map(|(at, _)| {
            here[at + defined.len()..]
                .split('"')
                .next()
                .unwrap_or_default()
        });
        let elsewhere = [
            crate::system::ui::NO_PROGRESS_VARIABLE,
            crate::rules::peaks::EXTRA_PEAK_ENV,
        ];
        let all: Vec<&str> = named.chain(elsewhere).collect();
        assert!(all.contains(&REFILL_SPARES), "{all:?}");
        for setting in all {
            assert!(ends_none.contains(&setting), "{setting}");
        }
    }
}
