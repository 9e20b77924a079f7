//! The correctness runs on unseen inputs: which cases the candidate failed on inputs neither side had
//! seen, and the attempt a verdict makes once held to them.

use super::{Rules, gate};
use crate::record::evidence::RunFile;
use crate::rules::decision::{Attempt, Decided, Tier};
use crate::rules::records;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
