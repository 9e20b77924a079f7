//! Where a step's time went: the start-ups it waited for, its correctness tests, each round's
//! measuring, the checks around them, the compile facts and the diagnosis, and the rest. The parts
//! the step waited for one after another add up to its wall time with `other_s`; the census, inside
//! the measuring, and the workers' start-ups, hidden or waited for, are told beside them.

use serde::Serialize;

use crate::system::workers::StartUp;

/// One round's part of a step's time, on the GPU whose part took longest.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RoundTimes {
    /// The round's runs' name: `round-2`, `confirm-round-1`.
    pub round: String,
    /// Waiting for the round's workers to be ready (a fresh pair's start-up not yet over).
    pub waited_s: f64,
    /// The candidate's run: the command in its warm worker, or a whole process of its own.
    pub candidate_s: f64,
    /// The baseline's run, the same way.
    pub baseline_s: f64,
}

/// Where a step's time went, in seconds (`step --json`'s `timings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timings {
    /// The whole step, from the command's start to its report.
    pub step_s: f64,
    /// Waiting for workers to be ready, before correctness and in the rounds.
    pub startup_waited_s: f64,
    /// Each worker's start-up, whether or not the step waited for it, the candidate's workers then the
    /// baseline's, each side's in the order they served (one started while an earlier round measured is
    /// counted from when its round let it go on, or from its start where it went at once).
    pub startups: Vec<StartUp>,
    /// Workers started ahead for rounds that did not come, ended without serving.
    pub started_unused: usize,
    /// The candidate's correctness tests: the command in its warm worker, or a whole process of its own.
    pub correctness_s: f64,
    /// Each round's measuring, both sides.
    pub rounds: Vec<RoundTimes>,
    /// The rounds' measuring, both sides, summed.
    pub measuring_s: f64,
    /// The census's untimed call in every benchmark run (inside `measuring_s`).
    pub census_s: f64,
    /// The no-re-roll comparison and the unseen-input check.
    pub checks_s: f64,
    pub compile_facts_s: f64,
    pub diagnosis_s: f64,
    /// Before the attempt: the lock, the checks of the session, the GPU and the change, the snapshot.
    pub preflight_s: f64,
    /// After the verdict, the compile facts aside: the commit and its note, the workers kept and the
    /// spares started for the next step, the table.
    pub record_s: f64,
    /// What is left of `step_s`: the sides' trees and workers handed over, the trees' checks after the
    /// rounds, the verdict.
    pub other_s: f64,
}

impl Timings {
    /// The time the step measured, waited for, checked and diagnosed, one after another.
    fn accounted_s(&self) -> f64 {
        self.startup_waited_s
            + self.correctness_s
            + self.measuring_s
            + self.checks_s
            + self.compile_facts_s
            + self.diagnosis_s
            + self.preflight_s
            + self.record_s
    }

    /// Adds a round's times.
    pub fn add_round(&mut self, round: RoundTimes) {
        self.startup_waited_s += round.waited_s;
        self.measuring_s += round.candidate_s + round.baseline_s;
        self.rounds.push(round);
    }

    /// With the step's whole time, `step_s`, and what it did not account for.
    pub fn closed(self, step_s: f64) -> Timings {
        let other_s = (step_s - self.accounted_s()).max(0.0);
        Timings {
            step_s: self.accounted_s() + other_s,
            other_s,
            ..self
        }
    }

    /// One line for a person: the step's time and its largest parts.
    pub fn line(&self) -> String {
        let hidden = self.startups.iter().filter(|s| s.ahead).count();
        format!(
            "{:.0} s: measuring {:.0} s in {} round{} (census {:.0} s), correctness {:.0} s, waiting for \
             start-ups {:.0} s ({} of {} started ahead), other {:.0} s",
            self.step_s,
            self.measuring_s,
            self.rounds.len(),
            if self.rounds.len() == 1 { "" } else { "s" },
            self.census_s,
            self.correctness_s,
            self.startup_waited_s,
            hidden,
            self.startups.len(),
            self.compile_facts_s
                + self.diagnosis_s
                + self.checks_s
                + self.preflight_s
                + self.record_s
                + self.other_s,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_and_the_rest_add_up_to_the_step() {
        let mut timings = Timings {
            correctness_s: 2.0,
            compile_facts_s: 1.0,
            preflight_s: 0.25,
            record_s: 0.25,
            ..Timings::default()
        };
        timings.add_round(RoundTimes {
            round: "round-1".into(),
            waited_s: 0.5,
            candidate_s: 3.0,
            baseline_s: 3.5,
        });
        let closed = timings.clone().closed(12.0);
        assert_eq!(closed.measuring_s, 6.5);
        assert_eq!(closed.startup_waited_s, 0.5);
        assert_eq!(closed.other_s, 1.5);
        assert_eq!(closed.step_s, 12.0);
        // a clock read before the parts ended never makes the rest negative
        let short = timings.closed(5.0);
        assert_eq!((short.other_s, short.step_s), (0.0, 10.5));
    }
}
