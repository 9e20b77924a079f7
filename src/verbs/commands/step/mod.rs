//! `step`: one iteration: check, test, benchmark, decide, commit.
//!
//! A kept change is committed as is. A reverted or crashed one is committed first (so it stays in the
//! history), then undone by the iteration commit, which carries the trailers: the branch's tree returns
//! exactly to what it was, and `git show <iteration>^` shows what was tried.

mod after;
mod preflight;
mod record;
mod report;

use std::time::{Duration, Instant};

use anyhow::Result;

use crate::features::diagnose::{Diagnosis, cache};
use crate::features::report::estimates;
use crate::features::snapshot::Tested;
use crate::measure::attempt::{Tried, holders};
use crate::measure::rounds::Checks;
use crate::measure::timings::Timings;
use crate::record::census;
use crate::record::evidence::Evidence;
use crate::record::history::{History, sandbox, write_table};
use crate::record::journal::{self, Journal, Lock, Phase, Verb};
use crate::record::session::{Iteration, NO_LETTER};
use crate::rules::decision::{self, Attempt, Cause, Status, Verdict};
use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::gpu::GpuState;
use crate::system::runner::{self, Runner};
use crate::system::ui::{Progress, Ui};
use crate::{features::recovery, rules::references, system::process};
use after::{After, Diagnosed, attach, budget_used_pct, commit_with_note, settle_workers, tried};
use preflight::{Preflight, gpu_pool, gpu_ready, preflight};
use record::Recorded;
use report::Done;
pub use report::StepReport;

/// What one iteration is told: what it tried, and how it runs.
#[derive(Debug)]
pub struct StepOptions {
    /// What this iteration changed, in a few words.
    pub description: String,
    /// Longer notes for the commit message body.
    pub notes: Option<String>,
    /// Time limit for the whole iteration.
    pub budget: Duration,
    /// Run even though the loop has stopped or escalated.
    pub continue_anyway: bool,
    /// The bottleneck the optimization targets.
    pub cause: Option<Cause>,
    /// The playbook letter it follows.
    pub opt: Option<String>,
    /// The GPUs to measure on (`0,1`), a (baseline, candidate) pair each; default: those found.
    pub gpus: Option<String>,
}

/// One iteration as a pipeline: preflight, attempt, judge, record.
pub fn run(ui: &mut Ui, repo: &Repo, args: &StepOptions) -> Result<StepReport> {
    let began = Instant::now();
    let progress = ui.sink();
    if crate::rules::trailers::one_line(&args.description).is_empty() {
        return Err(hinted(
            "the description is empty: the iteration's Cutile-Perf-Optimization would say nothing",
            "say in a few words what this change tried, e.g. `git cutile-perf step \"tile size 256\"`",
        ));
    }
    let _lock = Lock::take(repo, "step")?;
    recovery::refuse_unfinished(repo, progress)?;
    process::record_groups_in(journal::group_file(repo)?);
    let ready = preflight(repo, args.continue_anyway)?;
    let letter = Some(opt_letter(&ready.history, args.opt.as_deref())?);
    // the queue wait comes before the budget starts
    let place = runner::open(
        &ready.history.session.runner,
        &repo.root,
        &sandbox(repo),
        progress,
    )?;
    let gpu = gpu_ready(repo, &ready.history.session, &*place, progress)?;
    let gpus = gpu_pool(repo, &ready.history.session, &*place, args.gpus.as_deref())?;
    let tested = Tested::take(repo)?;
    let signs = census::shortcut_signs(&repo.git(&[
        "diff",
        "-U0",
        "--no-color",
        &tested.head,
        &tested.tree,
    ])?);
    let mut journal = Journal {
        verb: Verb::Step,
        pid: std::process::id(),
        phase: Phase::RunningTests,
        branch: tested.branch.clone().unwrap_or_default(),
        base: tested.head.clone(),
        original: None,
        edit_tree: Some(tested.tree.clone()),
        index: (repo.git(&["write-tree"]).ok()).map(|tree| tree.trim().to_string()),
        work_tree: None,
        note: None,
        made: Vec::new(),
        writer: crate::system::process_identity::ProcessIdentity::current(),
    };
    journal.save(repo)?;
    let on = Placed {
        place,
        gpu,
        gpus,
        progress,
    };
    let preflight_s = began.elapsed().as_secs_f64();
    let result = measure_and_record(repo, args, ready, letter, on, &tested, &mut journal);
    let done = recovery::settle(repo, &journal, result)?;
    let report = done.report();
    let timings = Timings {
        preflight_s,
        ..report.timings
    };
    Ok(StepReport {
        shortcut_signs: signs,
        timings: timings.closed(began.elapsed().as_secs_f64()),
        ..report
    })
}

/// The letter `--opt` names, or [`NO_LETTER`] when it says the change fits none. A step without
/// `--opt` is refused: the letter it applied would stay on offer and out of `tried`.
fn opt_letter(history: &History, opt: Option<&str>) -> Result<String> {
    match opt {
        Some(opt) if opt.trim().eq_ignore_ascii_case(NO_LETTER) => Ok(NO_LETTER.to_string()),
        Some(opt) => references::playbook_letter(opt, "--opt"),
        None => {
            let first = history.session.class.and_then(|class| {
                references::next_optimizations(class, &history.settled_letters())
                    .into_iter()
                    .next()
            });
            let name = match &first {
                Some(first) => format!(
                    "`--opt {}` if it follows {} ({}, the letter `git cutile-perf next` suggests first), \
                     another letter `next` lists",
                    first.letter, first.letter, first.title
                ),
                None => "`--opt <LETTER>` for the playbook letter it follows".to_string(),
            };
            Err(hinted(
                "step needs --opt: the playbook letter this change follows, so that `next` stops offering it",
                format!(
                    "step again with {name}, or `--opt {NO_LETTER}` if the change fits no playbook letter; \
                     your edit is still in the work tree"
                ),
            ))
        }
    }
}

/// Where the step runs, the GPU there as it began, and where its progress goes.
struct Placed<'a> {
    place: Box<dyn Runner>,
    gpu: Option<GpuState>,
    /// The GPUs to measure on (`gpu_pool`).
    gpus: Vec<String>,
    progress: &'a Progress,
}

/// Attempt, judge and record; the node is held through the diagnosis and the compile facts, which
/// run on it too, and released before the table is written.
fn measure_and_record(
    repo: &Repo,
    args: &StepOptions,
    ready: Preflight,
    letter: Option<String>,
    on: Placed,
    tested: &Tested,
    journal: &mut Journal,
) -> Result<Done> {
    let judged = judged(repo, args, &ready.history, letter, on, tested)?;
    let recording = Instant::now();
    let (tried, after) = (judged.tried, judged.after);
    let (progress, deadline) = (after.progress, after.deadline);
    let found = (judged.diagnosed.as_ref()).and_then(|d| d.found.as_ref());
    // the worker that holds the new baseline's code (the candidate's after a keep) stays up through
    // the commit; the other ends now, so that an interrupt meanwhile has one less to end
    let holder = holders(tried.held, judged.iteration.status == Status::Keep);
    tested.check(repo)?;
    let evidence = Evidence::new(
        &ready.history.session,
        judged.iteration.number,
        after.gpu.clone(),
        tried.runs,
    )
    .with_ended(tried.ended);
    let notes = args.notes.as_deref();
    let commit = commit_with_note(repo, journal, &ready, judged.iteration, notes, &evidence)?;
    let Preflight { mut history, .. } = ready;
    let code = commit.iteration.attempt.as_deref().unwrap_or(&commit.id);
    if let Some(found) = found {
        // only `compare`'s cache: losing it loses nothing recorded
        let _ = cache::remember(repo, code, found);
    }
    let facts_started = Instant::now();
    let already = (found, tried.candidate_dumps.as_path(), &evidence);
    let compile = after.compile_facts(repo, &history, code, &tried.attempt, already);
    let mut checks = tried.checks;
    checks.compile_facts_s = facts_started.elapsed().as_secs_f64();
    after.place.release();
    if compile.is_some() {
        attach(repo, &evidence.with_compile(compile), &commit.id, progress);
    }
    let Recorded { id, iteration } = commit;
    history.push(id.clone(), iteration);
    // the variants `next_action` offers compare each step's paired estimate, this one's included; the
    // step is recorded by now, so notes git cannot list leave the trailers to compare
    history.estimates = estimates(repo, &history).unwrap_or_default();
    settle_workers(
        repo,
        holder,
        judged.verdict.decision,
        &history,
        progress,
        deadline,
    );
    journal.enter(repo, Phase::WritingTable)?;
    let table = write_table(repo, &history)?;
    Ok(Done {
        timings: after_the_rounds(tried.timings, &checks, judged.diagnosed.as_ref(), recording),
        attempt: tried.attempt,
        diagnosis_s: judged.diagnosed.map(|d| d.seconds),
        no_gain: judged.verdict.no_gain,
        history,
        commit: id,
        table,
        checks,
        budget_used_pct: judged.budget_used_pct,
        gpus: tried.gpus,
    })
}

/// The attempt's `timings` with what the work after its rounds took: the compile facts (in `checks`),
/// the diagnosis, and the rest of what came after the verdict (`recording`), the record.
fn after_the_rounds(
    timings: Timings,
    checks: &Checks,
    diagnosed: Option<&Diagnosed>,
    recording: Instant,
) -> Timings {
    Timings {
        compile_facts_s: checks.compile_facts_s,
        diagnosis_s: diagnosed.map_or(0.0, |d| d.seconds),
        record_s: (recording.elapsed().as_secs_f64() - checks.compile_facts_s).max(0.0),
        ..timings
    }
}

/// A step measured and judged, not yet committed: the attempt, where the work after it runs, the
/// diagnosis (where one was asked for), the iteration and its verdict, and the share of `--budget` the
/// tests used.
struct Judged<'r, 'a> {
    tried: Tried<'r>,
    after: After<'a>,
    diagnosed: Option<Diagnosed>,
    iteration: Iteration,
    verdict: Verdict,
    budget_used_pct: f64,
}

/// The attempt at the snapshot `tested`, the diagnosis it calls for, and the iteration it makes.
fn judged<'r, 'a>(
    repo: &'r Repo,
    args: &StepOptions,
    history: &History,
    letter: Option<String>,
    on: Placed<'a>,
    tested: &Tested,
) -> Result<Judged<'r, 'a>> {
    let deadline = Instant::now() + args.budget;
    let (tried, mut after) = tried(repo, history, on, tested, deadline)?;
    let budget_used_pct = budget_used_pct(deadline, args.budget);
    // the verdict is known; a diagnosis may only add the cause (and escalate by its rule), so it runs
    // only where the cause is recorded: measured code without a `--cause`, that launched the kernel
    let diagnosed = match (args.cause, &tried.attempt) {
        (None, Attempt::Measured { paired, .. })
            if !crate::record::census::ran_no_allowed_kernel(&paired.reason) =>
        {
            Some(after.diagnose(repo, history)?)
        }
        _ => None,
    };
    let found = diagnosed.as_ref().and_then(|d| d.found.as_ref());
    let (mut iteration, verdict) =
        judge(history, &tried, args, letter, found.map(|f| &f.diagnosis));
    iteration.placement = after.placement.take();
    Ok(Judged {
        tried,
        after,
        diagnosed,
        iteration,
        verdict,
        budget_used_pct,
    })
}

/// The iteration the attempt makes under the session's rules, not yet committed. The cause is the
/// user's `--cause`, else the diagnosis's; a diagnosed scheduling or unknown cause gives its numbers.
fn judge(
    history: &History,
    tried: &Tried,
    args: &StepOptions,
    letter: Option<String>,
    diagnosis: Option<&Diagnosis>,
) -> (Iteration, Verdict) {
    let attempt = &tried.attempt;
    let cause = args.cause.or(diagnosis.map(|d| d.cause));
    let number = history.next_number();
    let mut verdict = decision::decide(
        attempt,
        number,
        history.no_gain_count(),
        cause,
        &history.session.thresholds,
    );
    if let Some(remark) = &tried.remark {
        verdict.reason += &format!("; {remark}");
    }
    if let Some(d) = diagnosis.filter(|d| matches!(d.cause, Cause::Scheduling | Cause::Unknown)) {
        verdict.reason += &format!(" ({})", d.because);
    }
    let baseline = history.current_baseline();
    let iteration = Iteration::judged(
        number,
        crate::rules::trailers::one_line(&args.description),
        letter,
        cause,
        attempt,
        &verdict,
        // without a measurement beside the candidate, the stored one
        baseline.latency_ms.unwrap_or(baseline.baseline_ms),
    );
    (iteration, verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::Decision;

    #[test]
    fn a_step_names_its_letter_or_says_it_fits_none() {
        let mut history = crate::record::history::tests::history(vec![iteration(
            0,
            Status::Keep,
            None,
            Decision::Continue,
        )]);
        let refused = opt_letter(&history, None).unwrap_err();
        assert_eq!(
            crate::rules::hint::of(&refused),
            Some(
                "step again with `--opt A` if it follows A (TMA loads and stores instead of gather/scatter, the \
                 letter `git cutile-perf next` suggests first), another letter `next` lists, or `--opt none` if \
                 the change fits no playbook letter; your edit is still in the work tree"
            )
        );
        assert_eq!(opt_letter(&history, Some("b")).unwrap(), "B");
        assert_eq!(opt_letter(&history, Some("None")).unwrap(), NO_LETTER);
        history.session.class = None;
        let refused = opt_letter(&history, None).unwrap_err();
        assert!(
            crate::rules::hint::of(&refused)
                .unwrap()
                .starts_with("step again with `--opt <LETTER>` for the playbook letter it follows, or `--opt none`"),
            "{refused:#}"
        );
    }
}
