//! No re-roll: whether the candidate did the baseline's GPU work, as far as the GPU can tell (the same
//! cuTile launches, GPU kernels and compiled Tile IR), so that measuring it again could only draw
//! another sample of the same work.

use std::collections::{BTreeMap, BTreeSet};

use super::{Census, Launch};
use crate::record::evidence::RunFile;
use crate::rules::compile;
use crate::rules::records;

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
/// a census or GPU kernel times, a launched kernel without a dump) is not alike: the candidate is
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::census::tests::{KERNEL, census};
    use crate::record::census::{DeviceTime, run_with_census};
    use crate::rules::compile::CompiledKernel;

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
}
