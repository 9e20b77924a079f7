//! The harness settings each perf case measured with (`use_cupti`, `rep`, ...): every run of a step,
//! and of a session, must have measured alike.

use std::collections::{BTreeMap, BTreeSet};

use super::Census;
use crate::record::evidence::RunFile;

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

/// Whether a config's runs, of both sides, measured with other harness settings than one another (a
/// worker started under another `CUPTI` or `REP`, say): the first setting that differs.
pub(super) fn measured_differently(ours: &[Census], theirs: &[Census]) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::census::run_with_census;
    use crate::record::census::tests::timed;

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
}
