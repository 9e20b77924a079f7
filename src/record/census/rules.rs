//! The rules a step the rounds would keep is held to, config by config, against the baseline's
//! censuses ([`gate`]): an allowed cuTile kernel launched and doing its share of the GPU time, its
//! launches not skipped and its arguments not changed while timed, the timed calls' outputs the census
//! call's, one set of harness settings, and a latency the GPU's peaks allow.

use super::{Census, LAUNCH_SLACK, Outputs, SHARE_SLACK, harness, physics};
use crate::record::evidence::RunFile;
use crate::record::session::Session;
use crate::record::session::harness::{DEFAULT_HARNESS, HarnessMode};
use crate::rules::decision::{Decided, Tier};
use crate::rules::peaks::Peak;

/// What a reason says of a candidate whose timed call launched none of the session's kernels.
pub const NO_ALLOWED_KERNEL: &str = "no cuTile kernel from the allowed paths ran in the timed call";

/// Whether a verdict's `reason` says the candidate launched none of the session's kernels: nothing of
/// the kernel is left to profile or dump.
pub fn ran_no_allowed_kernel(reason: &str) -> bool {
    reason.contains(NO_ALLOWED_KERNEL)
}

/// What the gate needs of the session.
pub struct Rules<'a> {
    pub allowed: &'a [String],
    /// The session GPU's peaks, when it is one the table knows.
    pub peak: Option<&'a Peak>,
    /// What the kernel computes, when its FLOPs can be told from its tensors' shapes.
    pub op: Option<physics::Op>,
    /// The harness function the session measures with, as recorded at `start`.
    pub harness: String,
}

impl Rules<'_> {
    pub fn of(session: &Session) -> Rules<'_> {
        Rules {
            allowed: &session.allowed,
            peak: session.gpu.as_deref().and_then(crate::rules::peaks::lookup),
            op: physics::Op::of(&session.kernel),
            harness: session
                .harness
                .as_ref()
                .map_or_else(|| DEFAULT_HARNESS.to_string(), HarnessMode::harness),
        }
    }
}

/// The paired verdict `decided`, reverted when the candidate's census shows a gain the kernel did not
/// earn. A verdict that reverts already keeps its tier, and its reason also names what the census shows:
/// a library fallback slower than the kernel is recorded as one, not only as slower. Runs without any
/// census (sessions recorded before it) pass through unchanged.
pub fn gate(decided: Decided, runs: &[RunFile], rules: &Rules) -> Decided {
    let Some(why) = refusal(&decided, runs, rules) else {
        return decided;
    };
    let reason = if decided.tier == Tier::Revert {
        format!(
            "{}; nor was it the kernel's own work: {why}",
            decided.reason
        )
    } else {
        format!("not the kernel's own gain: {why}")
    };
    Decided {
        tier: Tier::Revert,
        reason,
        ..decided
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
        let test = &config.test;
        if let Some(why) = measured_elsewhere(&candidate, &baseline, test, &rules.harness) {
            return Some(format!("{test}: {why}"));
        }
        if theirs.is_empty() {
            continue; // no census of the baseline: nothing to hold the candidate to
        }
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
        if let Some(why) = harness::measured_differently(&ours, &theirs).or_else(|| {
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

/// How the census plugin says that no harness call could be censused: the harness is not there, or the
/// test never called it.
const NOT_CENSUSED: [&str; 2] = ["no harness", "the test did not call its harness"];

/// Why a config's number is not the timed calls' own, by either side's censuses: the harness they
/// wrapped is not the session's, or its functions were replaced after its import (by code the test
/// imported, the kernel's among it), or no census could be taken because the harness is not there or
/// the test never called it.
fn measured_elsewhere(
    candidate: &[(String, Census)],
    baseline: &[(String, Census)],
    test: &str,
    harness: &str,
) -> Option<String> {
    let sides = [("candidate", candidate), ("baseline", baseline)];
    let censuses = || {
        sides.iter().flat_map(|(side, censuses)| {
            (censuses.iter())
                .filter(move |(id, _)| id == test)
                .map(move |(_, census)| (*side, census))
        })
    };
    for (side, census) in censuses() {
        if let Some(replaced) = &census.replaced {
            return Some(format!(
                "the {side}'s harness reported a number the timed calls did not make: {replaced}"
            ));
        }
        if let Some(wrapped) = census.wraps.as_deref().filter(|w| *w != harness) {
            return Some(format!(
                "the {side}'s census wrapped {wrapped}, not the session's harness {harness}"
            ));
        }
    }
    let none_taken = censuses().all(|(_, census)| !census.taken);
    let uncalled = |why: &String| NOT_CENSUSED.iter().any(|start| why.starts_with(start));
    let absent = censuses().find_map(|(_, c)| c.why.clone().filter(uncalled));
    absent.filter(|_| none_taken).map(|why| {
        format!(
            "neither side's timed calls could be censused ({why}): nothing holds the gain to them"
        )
    })
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

/// One candidate census against the baseline's: an allowed cuTile kernel must run, and do at least the
/// baseline's share of the GPU time less the slack.
fn share_refusal(census: &Census, baseline: &[Census], allowed: &[String]) -> Option<String> {
    let instead = |other: Option<(String, f64)>| match other {
        Some((name, share)) => format!(
            ": {:.0}% of GPU time in {}",
            share * 100.0,
            short_kernel_name(&name)
        ),
        None => String::new(),
    };
    if !census.launched_allowed(allowed) {
        let other = census.allowed_share(allowed).and_then(|(_, other)| other);
        return Some(format!("{NO_ALLOWED_KERNEL}{}", instead(other)));
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

/// A GPU kernel's name as a reason shows it: CUTLASS and torch kernels are named by whole C++ signatures
/// (a torch copy kernel's runs to 900 characters), so the return type and parameter list are dropped and
/// long template arguments shown as `<…>`.
fn short_kernel_name(name: &str) -> String {
    let name = name.strip_prefix("void ").unwrap_or(name);
    let name = name.replace("(anonymous namespace)::", "");
    let mut short = String::new();
    let (mut depth, mut arguments) = (0usize, String::new());
    for c in name.chars() {
        match (c, depth) {
            ('(', 0) => break,
            ('<', _) => depth += 1,
            ('>', _) => depth = depth.saturating_sub(1),
            _ => {}
        }
        match depth > 0 || c == '>' {
            true => arguments.push(c),
            false => short.push(c),
        }
        if depth == 0 && !arguments.is_empty() {
            short.push_str(match arguments.chars().count() > 40 {
                true => "<…>",
                false => &arguments,
            });
            arguments.clear();
        }
    }
    short
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

impl Census {
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
        let which = match c.kept.as_deref() {
            Some("fresh") => " (the first on input values no call had seen, written in place)",
            _ => "",
        };
        Some(format!(
            "timed call {}{which} returned other output than the census's own call: {how} (held {rule})",
            c.call
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::census::tests::{KERNEL, allowed, census, timed};
    use crate::record::census::{Compared, TimedLaunch, Tolerance};

    #[test]
    fn kernel_names_lose_their_signature_and_long_template_arguments() {
        assert_eq!(
            short_kernel_name("sm90_xmma_gemm_f16f16"),
            "sm90_xmma_gemm_f16f16"
        );
        assert_eq!(
            short_kernel_name(
                "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, \
                 false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)"
            ),
            "softmax_warp_forward<…>"
        );
        assert_eq!(
            short_kernel_name(
                "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::\
                 BinaryFunctor<float, float, float, at::native::MulFunctor<float> > >(at::TensorIteratorBase&, \
                 at::native::BinaryFunctor<float, float, float, at::native::MulFunctor<float> > const&)::\
                 {lambda(int)#1}>(int, at::native::gpu_kernel_impl<...>)"
            ),
            "at::native::elementwise_kernel<…>"
        );
        assert_eq!(short_kernel_name("fill<float>(float*)"), "fill<float>");
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
                    kept: None,
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
}
