//! The decision rules of the loop: what an attempt's outcome means for the change and for the loop.
//!
//! | outcome                                        | status | decision       |
//! |------------------------------------------------|--------|----------------|
//! | correctness FAIL                               | revert | try-next       |
//! | crash (died, timed out, errored, no record)    | crash  | try-next       |
//! | no change: the baseline's kernels and launches | revert | try-next       |
//! | measured: the paired rounds' tier (`verdict`)  | by tier: [`Tier::status_decision`] |
//! Then, in order: a root cause of scheduling/unknown escalates; reaching the iteration limit or the
//! limit of consecutive iterations without a gain stops.

use std::fmt;

use crate::rules::records::Measurement;
use crate::rules::stats::{Comparison, ConfigChange};

/// The reason of an [`Attempt::Unchanged`].
pub const NO_CHANGE: &str = "no change: compiled kernels and launches identical to the baseline; its numbers are not a gain";

/// The limits a session runs under; set at `start` and recorded in the baseline commit.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thresholds {
    /// Improvement (percent) from which the loop continues at full priority.
    pub continue_pct: f64,
    /// Improvement (percent) below which an iteration counts as no gain.
    pub gain_pct: f64,
    /// Slowdown (percent) of any single config that reverts the change.
    pub regression_pct: f64,
    pub max_iterations: u32,
    pub max_no_gain: u32,
}

impl Thresholds {
    /// The workflow's rules; the command line's defaults read these, so they are written only here.
    pub const DEFAULT: Thresholds = Thresholds {
        continue_pct: 5.0,
        gain_pct: 2.0,
        regression_pct: 2.0,
        max_iterations: 25,
        max_no_gain: 2,
    };

    /// Whether a result counts as a gain: it was kept and improved by at least the gain threshold.
    /// The one definition that both the verdict and the no-gain count of a history use.
    pub fn gained(&self, status: Status, change_pct: Option<f64>) -> bool {
        status == Status::Keep && change_pct.is_some_and(|change| -change >= self.gain_pct)
    }

    /// Limits that contradict each other, in words: a change between a continue threshold below the
    /// gain threshold and the gain threshold would continue at full priority and count as no gain.
    pub fn contradiction(&self) -> Option<String> {
        (self.continue_pct < self.gain_pct).then(|| {
            format!(
                "--continue-pct {} is below --gain-pct {}: an improvement between them would continue at full \
                 priority and count as no gain at once",
                self.continue_pct, self.gain_pct
            )
        })
    }
}

/// `continue 5%, gain 2%, regression 2%, at most 25 iterations, 2 without a gain`: as a note's summary
/// and `verify`'s findings name them.
impl std::fmt::Display for Thresholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "continue {}%, gain {}%, regression {}%, at most {} iterations, {} without a gain",
            self.continue_pct,
            self.gain_pct,
            self.regression_pct,
            self.max_iterations,
            self.max_no_gain
        )
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds::DEFAULT
    }
}

macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($variant),+ }

        /// Serialized as the same word the trailers and the table use.
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl $name {
            /// Every value, in the order declared.
            pub const ALL: &[$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }

            pub fn parse(word: &str) -> Option<Self> {
                match word { $($word => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum!(
    /// What happened to the attempted change.
    Status { Keep => "keep", Revert => "revert", Crash => "crash" }
);
word_enum!(Correctness { Pass => "PASS", Fail => "FAIL" });
word_enum!(
    /// What the loop does next.
    Decision {
        Continue => "continue",
        LowerPriority => "lower-priority",
        TryNext => "try-next",
        Stop => "stop",
        Escalate => "escalate",
    }
);
word_enum!(
    /// The bottleneck an optimization targets.
    Cause { Memory => "memory", Compute => "compute", Latency => "latency", Scheduling => "scheduling", Unknown => "unknown" }
);

impl Decision {
    /// Stop and escalate halt the loop until the user says `--continue`.
    pub fn halts(self) -> bool {
        matches!(self, Decision::Stop | Decision::Escalate)
    }
}

/// Whether the loop runs, or which halt holds it until `--continue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoopState {
    Running,
    Stopped,
    Escalated,
    /// The branch holds commits the tool did not make: `repair` takes them back before the loop goes on.
    Foreign,
}

impl LoopState {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopState::Running => "running",
            LoopState::Stopped => "stopped",
            LoopState::Escalated => "escalated",
            LoopState::Foreign => "foreign",
        }
    }
}

/// One config's paired estimate.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ConfigEstimate {
    pub pass: String,
    pub test: String,
    /// The rounds that measured it: the first, then each one it was still open for.
    pub rounds: usize,
    /// Its change is the ratio of the records' means: the session's statistic moves in whole timer
    /// ticks here (`verdict::Rules::Ticked`). `baseline_ms` stays that statistic.
    pub on_record_means: bool,
    /// Geometric mean of the baseline's runs.
    pub baseline_ms: f64,
    /// `baseline_ms` moved by the change: the geometric mean of the candidate's runs where the change
    /// is their plain ratio (no order term, no records' means).
    pub candidate_ms: f64,
    /// Candidate against baseline in percent (positive is slower), with its interval.
    pub change_pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
}

impl ConfigEstimate {
    /// `t1 forward: +5.00% (+4.85% to +5.15%)`, and `, on the records' means` where they judged it.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{} {}: {:+.2}% ({:+.2}% to {:+.2}%{})",
            self.test,
            self.pass,
            self.change_pct,
            self.low_pct,
            self.high_pct,
            match self.on_record_means {
                true => ", on the records' means",
                false => "",
            }
        )
    }
}

/// The geometric mean over configs, with the improvement (positive is faster) and its interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Aggregate {
    pub baseline_ms: f64,
    pub candidate_ms: f64,
    pub improvement_pct: f64,
    pub low_pct: f64,
    pub high_pct: f64,
}

/// What the loop does with the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Revert,
    Continue,
    LowerPriority,
    Stop,
}

impl Tier {
    /// The status and decision `decision::decide` gives the same outcome.
    pub fn status_decision(self) -> (Status, Decision) {
        match self {
            Tier::Revert => (Status::Revert, Decision::TryNext),
            Tier::Continue => (Status::Keep, Decision::Continue),
            Tier::LowerPriority => (Status::Keep, Decision::LowerPriority),
            Tier::Stop => (Status::Keep, Decision::Stop),
        }
    }
}

/// The estimates after some rounds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Estimate {
    pub rounds: usize,
    pub configs: Vec<ConfigEstimate>,
    pub aggregate: Aggregate,
}

impl Estimate {
    /// The estimate as a `Comparison` of the candidate's and the baseline's means, for trailers and tables.
    pub fn comparison(&self) -> Comparison {
        Comparison {
            configs: self
                .configs
                .iter()
                .map(|c| ConfigChange {
                    pass: c.pass.clone(),
                    test: c.test.clone(),
                    baseline_ms: c.baseline_ms,
                    value_ms: c.candidate_ms,
                    change_pct: c.change_pct,
                    rounds: Some(c.rounds),
                    on_record_means: Some(c.on_record_means),
                })
                .collect(),
            baseline_ms: self.aggregate.baseline_ms,
            latency_ms: self.aggregate.candidate_ms,
        }
    }
}

/// A decided verdict.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Decided {
    pub tier: Tier,
    pub reason: String,
    /// Set when no further round could be run and the verdict rests on the means alone: why.
    pub undecided: Option<String>,
    pub estimate: Estimate,
}

/// What an attempt produced, owned by the step that ran it: everything the verdict and the record need.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The correctness tests failed (these cases); the benchmark was not run.
    CorrectnessFailed { failed: Vec<String> },
    /// The rounds would keep it, but with every seed the tests set shifted by `offset`, these cases
    /// failed where the baseline's code passes them.
    UnseenInputsFailed { failed: Vec<String>, offset: u32 },
    /// The rounds would keep it, but the candidate compiles to the baseline's kernels and launches them
    /// as the baseline does (`census::unchanged`): measuring the same work again could only have drawn a
    /// luckier sample, so its numbers are not a gain.
    Unchanged,
    /// A run died, timed out or gave no usable record.
    Crashed {
        correctness: Correctness,
        why: String,
    },
    Measured {
        configs: Vec<Measurement>,
        comparison: Comparison,
        /// The verdict of paired rounds against the baseline measured in the same step.
        paired: Decided,
    },
}

impl Attempt {
    pub fn correctness(&self) -> Correctness {
        match self {
            Attempt::CorrectnessFailed { .. } | Attempt::UnseenInputsFailed { .. } => {
                Correctness::Fail
            }
            Attempt::Crashed { correctness, .. } => *correctness,
            Attempt::Measured { .. } | Attempt::Unchanged => Correctness::Pass,
        }
    }

    /// The attempt that decided paired rounds make: the candidate's configs and the comparison.
    pub fn paired(decided: Decided) -> Attempt {
        let comparison = decided.estimate.comparison();
        let configs = comparison
            .configs
            .iter()
            .map(|c| Measurement {
                pass: c.pass.clone(),
                test: c.test.clone(),
                value: c.value_ms,
                mean: None,
            })
            .collect();
        Attempt::Measured {
            configs,
            comparison,
            paired: decided,
        }
    }

    pub fn comparison(&self) -> Option<&Comparison> {
        match self {
            Attempt::Measured { comparison, .. } => Some(comparison),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub status: Status,
    pub decision: Decision,
    pub reason: String,
    /// Consecutive iterations without a gain, this one included.
    pub no_gain: u32,
}

/// How many test cases failed and the first few of them, for a reason (which an agent reads, while the
/// progress line with every id may never reach it): ` in 5 cases: a, b, c and 2 more`; empty without ids.
fn failed_cases(failed: &[String]) -> String {
    const SHOWN: usize = 3;
    let (count, first) = (failed.len(), failed.iter().take(SHOWN).cloned());
    let more = match count.saturating_sub(SHOWN) {
        0 => String::new(),
        rest => format!(" and {rest} more"),
    };
    match count {
        0 => String::new(),
        1 => format!(" in 1 case: {}", failed[0]),
        _ => format!(
            " in {count} cases: {}{more}",
            first.collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Decides one iteration. `no_gain_before` counts the consecutive no-gain iterations before this one.
pub fn decide(
    attempt: &Attempt,
    iteration: u32,
    no_gain_before: u32,
    cause: Option<Cause>,
    limits: &Thresholds,
) -> Verdict {
    let (status, decision, reason) = match attempt {
        Attempt::CorrectnessFailed { failed } => (
            Status::Revert,
            Decision::TryNext,
            format!(
                "correctness failed{}; the benchmark was not run",
                failed_cases(failed)
            ),
        ),
        Attempt::UnseenInputsFailed { failed, offset } => (
            Status::Revert,
            Decision::TryNext,
            format!(
                "correctness failed on inputs neither side had seen (seeds shifted by {offset}), where the baseline's code passes: {}",
                failed.join(", ")
            ),
        ),
        Attempt::Unchanged => (Status::Revert, Decision::TryNext, NO_CHANGE.to_string()),
        Attempt::Crashed { why, .. } => (Status::Crash, Decision::TryNext, format!("crash: {why}")),
        Attempt::Measured { paired, .. } => {
            let (status, decision) = paired.tier.status_decision();
            (status, decision, paired.reason.clone())
        }
    };
    let change_pct = attempt.comparison().map(Comparison::change_pct);
    let no_gain = if limits.gained(status, change_pct) {
        0
    } else {
        no_gain_before + 1
    };
    let mut verdict = Verdict {
        status,
        decision,
        reason,
        no_gain,
    };
    if let Some(cause @ (Cause::Scheduling | Cause::Unknown)) = cause {
        verdict.decision = Decision::Escalate;
        verdict.reason += &format!("; a {cause} root cause goes to the user");
        return verdict;
    }
    // every rule that stops the loop, each in a clause of its own
    let mut stops = Vec::new();
    if verdict.decision == Decision::Stop {
        stops.push(format!(
            "a kept change gained less than {}%",
            fmt_pct(limits.gain_pct)
        ));
    }
    if iteration >= limits.max_iterations {
        stops.push(format!(
            "iteration {iteration} reached the limit of {}",
            limits.max_iterations
        ));
    }
    if no_gain >= limits.max_no_gain {
        stops.push(format!(
            "{no_gain} iterations in a row without a gain of {}% or more",
            fmt_pct(limits.gain_pct)
        ));
    }
    for stop in stops {
        verdict.decision = Decision::Stop;
        verdict.reason += &format!("; stop rule: {stop}");
    }
    verdict
}

/// A threshold as written by a person: `5`, `2.5`.
pub fn fmt_pct(value: f64) -> String {
    format!("{value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What paired rounds at `change_pct` (negative is faster) decide: `tier`, for `reason`.
    fn measured_attempt(change_pct: f64, tier: Tier, reason: &str) -> Attempt {
        let candidate_ms = 1.0 + change_pct / 100.0;
        Attempt::paired(Decided {
            tier,
            reason: reason.into(),
            undecided: None,
            estimate: Estimate {
                rounds: 1,
                configs: vec![ConfigEstimate {
                    pass: "forward".into(),
                    test: "t0".into(),
                    rounds: 1,
                    on_record_means: false,
                    baseline_ms: 1.0,
                    candidate_ms,
                    change_pct,
                    low_pct: change_pct,
                    high_pct: change_pct,
                }],
                aggregate: Aggregate {
                    baseline_ms: 1.0,
                    candidate_ms,
                    improvement_pct: -change_pct,
                    low_pct: -change_pct,
                    high_pct: -change_pct,
                },
            },
        })
    }

    /// A 6% gain the rounds keep, to continue.
    fn kept() -> Attempt {
        measured_attempt(-6.0, Tier::Continue, "6.00% faster")
    }

    fn run(attempt: Attempt) -> Verdict {
        decide(&attempt, 1, 0, None, &Thresholds::default())
    }

    #[test]
    fn correctness_failure_reverts() {
        let v = run(Attempt::CorrectnessFailed { failed: vec![] });
        assert_eq!(
            (v.status, v.decision, v.no_gain),
            (Status::Revert, Decision::TryNext, 1)
        );
        assert_eq!(v.reason, "correctness failed; the benchmark was not run");
        let ids = |n: usize| (1..=n).map(|i| format!("t.py::test_op[{i}]")).collect();
        let v = run(Attempt::CorrectnessFailed { failed: ids(1) });
        assert_eq!(
            v.reason,
            "correctness failed in 1 case: t.py::test_op[1]; the benchmark was not run"
        );
        let v = run(Attempt::CorrectnessFailed { failed: ids(3) });
        assert_eq!(
            v.reason,
            "correctness failed in 3 cases: t.py::test_op[1], t.py::test_op[2], t.py::test_op[3]; the \
             benchmark was not run"
        );
        let v = run(Attempt::CorrectnessFailed { failed: ids(5) });
        assert_eq!(
            v.reason,
            "correctness failed in 5 cases: t.py::test_op[1], t.py::test_op[2], t.py::test_op[3] and 2 \
             more; the benchmark was not run"
        );
    }

    #[test]
    fn crash_is_try_next() {
        let v = run(Attempt::Crashed {
            correctness: Correctness::Pass,
            why: "pytest was killed by signal 9".into(),
        });
        assert_eq!((v.status, v.decision), (Status::Crash, Decision::TryNext));
        assert_eq!(v.reason, "crash: pytest was killed by signal 9");
    }

    #[test]
    fn a_measured_attempt_takes_the_rounds_tier_and_reason() {
        let v = run(measured_attempt(
            3.0,
            Tier::Revert,
            "t0 forward is 3% slower",
        ));
        assert_eq!(
            (v.status, v.decision, v.reason.as_str(), v.no_gain),
            (
                Status::Revert,
                Decision::TryNext,
                "t0 forward is 3% slower",
                1
            )
        );
        let v = run(measured_attempt(-3.0, Tier::LowerPriority, "3% faster"));
        assert_eq!(
            (v.status, v.decision, v.no_gain),
            (Status::Keep, Decision::LowerPriority, 0)
        );
        // a keep below the gain threshold is no gain
        let v = run(measured_attempt(-1.0, Tier::Stop, "1% faster"));
        assert_eq!(
            (v.status, v.decision, v.no_gain),
            (Status::Keep, Decision::Stop, 1)
        );
    }

    #[test]
    fn two_without_gain_stop() {
        let v = decide(
            &Attempt::CorrectnessFailed { failed: vec![] },
            4,
            1,
            None,
            &Thresholds::default(),
        );
        assert_eq!(
            (v.status, v.decision, v.no_gain),
            (Status::Revert, Decision::Stop, 2)
        );
        assert_eq!(
            v.reason,
            "correctness failed; the benchmark was not run; stop rule: 2 iterations in a row without a gain \
             of 2% or more"
        );
        // a gain resets the count
        let v = decide(&kept(), 4, 1, None, &Thresholds::default());
        assert_eq!((v.decision, v.no_gain), (Decision::Continue, 0));
    }

    #[test]
    fn iteration_limit_stops() {
        let v = decide(&kept(), 25, 0, None, &Thresholds::default());
        assert_eq!((v.status, v.decision), (Status::Keep, Decision::Stop));
        assert_eq!(
            v.reason,
            "6.00% faster; stop rule: iteration 25 reached the limit of 25"
        );
        let v = decide(&kept(), 24, 0, None, &Thresholds::default());
        assert_eq!(v.decision, Decision::Continue);
    }

    #[test]
    fn each_rule_that_stops_the_loop_has_a_clause_of_its_own() {
        let small = measured_attempt(-1.0, Tier::Stop, "1.00% faster overall (< 2%)");
        let v = decide(&small, 25, 1, None, &Thresholds::default());
        assert_eq!((v.status, v.decision), (Status::Keep, Decision::Stop));
        assert_eq!(
            v.reason,
            "1.00% faster overall (< 2%); stop rule: a kept change gained less than 2%; stop rule: iteration \
             25 reached the limit of 25; stop rule: 2 iterations in a row without a gain of 2% or more"
        );
    }

    #[test]
    fn scheduling_and_unknown_escalate() {
        for cause in [Cause::Scheduling, Cause::Unknown] {
            let v = decide(&kept(), 1, 0, Some(cause), &Thresholds::default());
            assert_eq!((v.status, v.decision), (Status::Keep, Decision::Escalate));
            assert_eq!(
                v.reason,
                format!("6.00% faster; a {cause} root cause goes to the user")
            );
        }
        let v = decide(&kept(), 1, 0, Some(Cause::Memory), &Thresholds::default());
        assert_eq!(v.decision, Decision::Continue);
    }

    #[test]
    fn words_round_trip() {
        for d in [
            Decision::Continue,
            Decision::LowerPriority,
            Decision::TryNext,
            Decision::Stop,
            Decision::Escalate,
        ] {
            assert_eq!(Decision::parse(d.as_str()), Some(d));
        }
        assert_eq!(Status::parse("keep"), Some(Status::Keep));
        assert_eq!(Correctness::parse("pass"), None);
    }
}
