//! `step`: one iteration: check, test, benchmark, decide, commit.
//!
//! A kept change is committed as is. A reverted or crashed one is committed first (so it stays in the
//! history), then undone by the iteration commit, which carries the trailers: the branch's tree returns
//! exactly to what it was, and `git show <iteration>^` shows what was tried.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::{Interrupted, diagnose, require_history, sandbox, write_table};
use crate::cli::StepArgs;
use crate::decision::{self, Attempt, Cause, Correctness, Decision, Status, Verdict};
use crate::evidence::{Evidence, RunFile};
use crate::git::Repo;
use crate::guard;
use crate::history::{Configs, History, LoopState};
use crate::journal::{self, Journal, Lock, Phase, Verb};
use crate::paired::{self, BaselineTree, Paired};
use crate::pytest::{CorrectnessRun, Pytest};
use crate::records::Measurement;
use crate::runner::{Placement, Runner};
use crate::session::{Iteration, fmt_change, fmt_ms, short};
use crate::snapshot::Tested;
use crate::stats::{Comparison, ConfigChange};
use crate::trailers::{Block, render_message};
use crate::ui;
use crate::verdict::{Decided, NoiseFloor};
use crate::{process, recovery};

/// What `step` did, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct StepReport {
    pub iteration: u32,
    pub optimization: String,
    pub opt: Option<String>,
    pub cause: Option<Cause>,
    pub status: Status,
    pub correctness: Correctness,
    pub latency_ms: Option<f64>,
    pub baseline_ms: f64,
    pub change_pct: Option<f64>,
    pub decision: Decision,
    pub reason: String,
    pub no_gain: u32,
    pub configs: Vec<ConfigChange>,
    pub commit: String,
    pub attempt: Option<String>,
    /// The Slurm node and job that ran it; none locally.
    pub placement: Option<Placement>,
    /// Benchmark runs per side (candidate and baseline) in the paired rounds.
    pub rounds: Option<u32>,
    pub table: PathBuf,
    pub next: String,
}

/// One iteration as a pipeline: preflight, attempt, judge, record, render.
pub fn run(repo: &Repo, args: &StepArgs, out: &mut impl Write) -> Result<StepReport> {
    let StepArgs {
        description,
        notes,
        budget,
        continue_anyway,
        cause,
        opt,
        output,
    } = args;
    let _lock = Lock::take(repo, "step")?;
    recovery::refuse_unfinished(repo)?;
    process::record_groups_in(journal::group_file(repo)?);
    let ready = preflight(repo, *continue_anyway)?;
    let letter = opt.as_deref().map(playbook_letter).transpose()?;
    // the queue wait comes before the budget starts
    let place = Runner::acquire(&ready.history.session.runner, &repo.root, &sandbox(repo))?;
    let tested = Tested::take(repo)?;
    let mut journal = Journal {
        verb: Verb::Step,
        pid: std::process::id(),
        phase: Phase::RunningTests,
        branch: tested.branch.clone().unwrap_or_default(),
        base: tested.head.clone(),
        original: None,
        edit_tree: Some(tested.tree.clone()),
    };
    journal.save(repo)?;
    let result = (|| {
        let deadline = Instant::now() + *budget;
        let Tried {
            attempt,
            runs,
            remark,
        } = attempt(repo, &ready.history, &place, deadline)?;
        let placement = place.placement().cloned();
        place.release();
        // the verdict is known; a diagnosis may only add the cause (and escalate by its rule)
        let diagnosed = match (cause, &attempt) {
            (None, Attempt::Measured { .. }) => {
                diagnose::cause_for(repo, &ready.history, deadline)?
            }
            _ => None,
        };
        let found_cause = diagnosed.as_ref().map(|found| &found.diagnosis);
        let (mut iteration, mut verdict) = judge(
            &ready.history,
            &attempt,
            description,
            letter,
            cause.or(found_cause.map(|d| d.cause)),
        );
        if let Some(remark) = remark {
            iteration.reason += &format!("; {remark}");
            verdict.reason = iteration.reason.clone();
        }
        if let Some(d) =
            found_cause.filter(|d| matches!(d.cause, Cause::Scheduling | Cause::Unknown))
        {
            iteration.reason += &format!(" ({})", d.because);
            verdict.reason = iteration.reason.clone();
        }
        iteration.placement = placement;
        tested.check(repo)?;
        let Preflight {
            mut history,
            changed,
        } = ready;
        let commit = record(
            repo,
            &mut journal,
            &history,
            iteration,
            &changed,
            notes.as_deref(),
        )?;
        let evidence = Evidence::new(
            &history.session,
            commit.iteration.number,
            crate::gpu::detect(),
            runs,
        );
        if let Err(e) = evidence.attach(repo, &commit.id) {
            ui::progress_line(&format!(
                "warning: the iteration is recorded, but its evidence note is not: {e:#}"
            ));
        }
        if let Some(found) = &diagnosed {
            let code = commit.iteration.attempt.as_deref().unwrap_or(&commit.id);
            // only `compare`'s cache: losing it loses nothing recorded
            let _ = diagnose::remember(repo, code, found);
        }
        history.push(commit.id.clone(), commit.iteration);
        journal.enter(repo, Phase::WritingTable)?;
        let table = write_table(repo, &history)?;
        Ok((attempt, verdict, history, commit.id, table))
    })();
    let (attempt, verdict, history, commit_id, table) = recovery::settle(repo, &journal, result)?;
    let (_, iteration) = history.iterations.last().expect("just pushed");
    let report = StepReport {
        iteration: iteration.number,
        optimization: iteration.optimization.clone(),
        opt: iteration.letter.clone(),
        cause: iteration.cause,
        status: iteration.status,
        correctness: iteration.correctness,
        latency_ms: iteration.latency_ms,
        baseline_ms: iteration.baseline_ms,
        change_pct: iteration.change_pct,
        decision: iteration.decision,
        reason: iteration.reason.clone(),
        no_gain: verdict.no_gain,
        configs: attempt
            .comparison()
            .map_or_else(Vec::new, |c| c.configs.clone()),
        commit: commit_id,
        attempt: iteration.attempt.clone(),
        placement: iteration.placement.clone(),
        rounds: iteration.rounds,
        table,
        next: next_action(iteration, &history),
    };
    render(&report, attempt.comparison(), output.json, out)?;
    Ok(report)
}

/// The iteration the attempt makes under the session's rules, not yet committed.
fn judge(
    history: &History,
    attempt: &Attempt,
    description: &str,
    letter: Option<String>,
    cause: Option<Cause>,
) -> (Iteration, Verdict) {
    let number = history.next_number();
    let verdict = decision::decide(
        attempt,
        number,
        history.no_gain_count(),
        cause,
        &history.session.thresholds,
    );
    let baseline = history.current_baseline();
    let iteration = Iteration {
        number,
        optimization: crate::trailers::one_line(description),
        letter,
        cause,
        latency_ms: attempt.comparison().map(|c| c.latency_ms),
        correctness: attempt.correctness(),
        status: verdict.status,
        baseline_ms: baseline.latency_ms.unwrap_or(baseline.baseline_ms),
        change_pct: attempt.comparison().map(|c| c.change_pct()),
        decision: verdict.decision,
        reason: verdict.reason.clone(),
        configs: match attempt {
            Attempt::Measured { configs, .. } => configs.clone(),
            _ => Vec::new(),
        },
        attempt: None,
        placement: None,
        rounds: match attempt {
            Attempt::Measured {
                paired: Some(paired),
                ..
            } => Some(paired.estimate.rounds as u32),
            _ => None,
        },
    };
    (iteration, verdict)
}

/// What the checks before any run found: the session read once, and the paths the change touches.
struct Preflight {
    history: History,
    changed: Vec<String>,
}

/// Refuses, before anything runs, a halted loop, an empty change, a change outside the allowed paths
/// and a history that broke the rule.
fn preflight(repo: &Repo, continue_anyway: bool) -> Result<Preflight> {
    let history = require_history(repo, Configs::CurrentBaseline)?;
    let session = &history.session;
    if let (state, Some(halted)) = history.loop_state()
        && !continue_anyway
    {
        bail!(
            "the loop has {} at iteration {}: {}\nhint: pass --continue to try another optimization anyway",
            match state {
                LoopState::Escalated => "escalated to you",
                _ => "stopped",
            },
            halted.number,
            halted.reason
        );
    }
    crate::refusals::check_step(repo, &session.allowed)?;
    if let Some(branch) = repo.branch()? {
        crate::ignored::check(repo, &branch)?;
    }
    let changed = repo.all_changes()?;
    if changed.is_empty() {
        bail!(
            "nothing to try: the work tree has no changes\nhint: apply one optimization to {} first",
            session.allowed.join(" or ")
        );
    }
    let outside = guard::disallowed(&changed, &session.allowed);
    if !outside.is_empty() {
        bail!(
            "only the session's allowed paths may change, but these did:\n  {}\nallowed: {}\nhint: undo them \
             (`git restore <path>`, or move new files away) and run step again",
            outside.join("\n  "),
            session.allowed.join(", ")
        );
    }
    let since_baseline = repo.changed_between(&history.baseline_commit, "HEAD")?;
    let broken = guard::disallowed(&since_baseline, &session.allowed);
    if !broken.is_empty() {
        bail!(
            "the session history broke the rule: commits since the baseline {} changed paths outside the allowed set:\n  {}\n\
             hint: nothing is recorded on a broken history; revert those commits first",
            short(&history.baseline_commit),
            broken.join("\n  ")
        );
    }
    let foreign = super::verify::foreign_findings(repo, &history)?;
    if !foreign.is_empty() {
        bail!(
            "the session history holds commits the tool did not make:\n  {}\nhint: nothing is recorded over them; \
             revert them (`git revert <commit>`), or, for your own latest commits, `git reset --soft {}` and let \
             `step` record the change",
            foreign
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n  "),
            short(
                history
                    .iterations
                    .last()
                    .map_or(&history.baseline_commit, |(c, _)| c)
            )
        );
    }
    Ok(Preflight { history, changed })
}

/// What the attempt stage produced: the attempt, the JUnit files of its runs (for the evidence note),
/// and a remark for the reason when a suspicious gain was confirmed.
struct Tried {
    attempt: Attempt,
    runs: Vec<RunFile>,
    remark: Option<String>,
}

/// Runs correctness, then (if it passed) paired benchmark rounds of the candidate and the current
/// baseline's code; a config more than ten times faster than its baseline is measured again (a second
/// set of rounds) before it is believed. Ctrl-C is an error: nothing is recorded.
fn attempt(repo: &Repo, history: &History, place: &Runner, deadline: Instant) -> Result<Tried> {
    let session = &history.session;
    let runner = Pytest {
        python: &session.python,
        root: &repo.root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox: sandbox(repo),
        deadline,
        place,
    };
    // older sessions have no evidence note on their baseline: then no case list to hold them to
    let baseline_passed = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.passed_cases()?,
        None => Vec::new(),
    };
    let interrupted = || Interrupted("nothing was recorded; your changes are as you left them");
    let mut tried = Tried {
        attempt: Attempt::CorrectnessFailed { failed: Vec::new() },
        runs: Vec::new(),
        remark: None,
    };
    let correctness = runner.correctness()?;
    tried
        .runs
        .extend(RunFile::read(&runner.sandbox, "correctness"));
    match correctness.against_baseline(&baseline_passed) {
        CorrectnessRun::Interrupted => return Err(interrupted().into()),
        CorrectnessRun::Fail { failed } => {
            ui::progress_line(&format!("correctness FAIL: {}", failed.join(", ")));
            tried.attempt = Attempt::CorrectnessFailed { failed };
            return Ok(tried);
        }
        CorrectnessRun::Crash(why) => {
            tried.attempt = Attempt::Crashed {
                correctness: Correctness::Fail,
                why,
            };
            return Ok(tried);
        }
        CorrectnessRun::Pass { .. } => {}
    }
    let tree = BaselineTree::add(repo, history.current_baseline_commit())?;
    let baseline = Pytest {
        root: &tree.path,
        sandbox: sandbox(repo).join("baseline"),
        ..runner.clone()
    };
    let limits = &session.thresholds;
    let floor = NoiseFloor::from_spreads(&session.spread);
    let measure = |prefix: &str, runs: &mut Vec<RunFile>| -> Result<Result<Decided, String>> {
        Ok(
            match paired::measure(
                &runner,
                &baseline,
                session.statistic,
                limits,
                &floor,
                deadline,
                prefix,
                runs,
            )? {
                Paired::Interrupted => return Err(interrupted().into()),
                Paired::Crashed(why) => Err(why),
                Paired::Decided(decided) => Ok(decided),
            },
        )
    };
    let mut measured = measure("round", &mut tried.runs)?;
    if let Ok(first) = &measured
        && !first.estimate.comparison().suspicious().is_empty()
    {
        ui::progress_line("a config is more than 10x faster than its baseline: measuring again");
        measured = match measure("confirm-round", &mut tried.runs)? {
            Ok(second) => {
                match crate::stats::confirm(
                    &first.estimate.comparison(),
                    &second.estimate.comparison(),
                ) {
                    Ok(remark) => {
                        tried.remark = Some(remark);
                        Ok(second)
                    }
                    Err(why) => Err(why),
                }
            }
            Err(why) => Err(why),
        };
    }
    tried.attempt = match measured {
        Ok(decided) => measured_attempt(decided),
        Err(why) => Attempt::Crashed {
            correctness: Correctness::Pass,
            why,
        },
    };
    Ok(tried)
}

/// The attempt that decided paired rounds make: the candidate's configs and the comparison.
pub fn measured_attempt(decided: Decided) -> Attempt {
    let comparison = decided.estimate.comparison();
    let configs = comparison
        .configs
        .iter()
        .map(|c| Measurement {
            pass: c.pass.clone(),
            test: c.test.clone(),
            value: c.value_ms,
        })
        .collect();
    Attempt::Measured {
        configs,
        comparison,
        paired: Some(decided),
    }
}

fn render(
    report: &StepReport,
    comparison: Option<&Comparison>,
    json: bool,
    out: &mut impl Write,
) -> Result<()> {
    if json {
        return ui::write_json(out, report);
    }
    writeln!(
        out,
        "{} {}: {}  {} ms (baseline {} ms, {})  correctness {}  -> {}",
        ui::bold("iteration"),
        report.iteration,
        ui::word(report.status),
        fmt_ms(report.latency_ms),
        fmt_ms(Some(report.baseline_ms)),
        fmt_change(report.change_pct),
        ui::word(report.correctness),
        ui::word(report.decision),
    )?;
    writeln!(out, "  reason   {}", report.reason)?;
    if let Some(worst) = comparison.and_then(|c| c.worst()) {
        writeln!(
            out,
            "  slowest  {} {} {:+.2}%",
            worst.test, worst.pass, worst.change_pct
        )?;
    }
    let kept_as = report.attempt.as_deref().map_or(String::new(), |a| {
        format!(
            " (the attempt is kept as {}: `git show {}`)",
            short(a),
            short(a)
        )
    });
    writeln!(out, "  commit   {}{kept_as}", short(&report.commit))?;
    writeln!(out, "  table    {}", report.table.display())?;
    writeln!(out, "next: {}", report.next)?;
    Ok(())
}

/// The playbook letter `--opt` names, checked against the embedded playbook.
fn playbook_letter(opt: &str) -> Result<String> {
    let letter = opt.trim().to_uppercase();
    let entries = crate::references::playbook_entries();
    if entries.iter().any(|(l, _)| *l == letter) {
        return Ok(letter);
    }
    let letters: Vec<_> = entries.iter().map(|(l, _)| *l).collect();
    bail!(
        "--opt {opt:?} is not a playbook letter ({})\nhint: `git cutile-perf refs playbook` lists them",
        letters.join(", ")
    )
}

/// What `record` committed: the iteration commit, and the iteration as recorded (its attempt named).
struct Recorded {
    id: String,
    iteration: Iteration,
}

/// Commits the iteration; for a revert or crash, the attempt first, then its undoing with the trailers.
/// Each phase is journaled first; on a failure the caller's `recovery::settle` puts things back.
fn record(
    repo: &Repo,
    journal: &mut Journal,
    history: &History,
    mut iteration: Iteration,
    changed: &[String],
    notes: Option<&str>,
) -> Result<Recorded> {
    let mut add = vec!["--literal-pathspecs", "add", "-A", "--"];
    add.extend(changed.iter().map(String::as_str));
    let kernel_name = std::path::Path::new(&history.session.kernel)
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let kept = iteration.status == Status::Keep;
    journal.enter(
        repo,
        if kept {
            Phase::CommittingIteration
        } else {
            Phase::CommittingAttempt
        },
    )?;
    repo.git(&add)?;
    if !kept {
        let subject = format!(
            "cutile-perf: attempt {} on {kernel_name}: {}",
            iteration.number, iteration.optimization
        );
        let attempt = repo
            .commit(&format!("{}\n", crate::trailers::one_line(&subject)), false)
            .context("could not commit the attempt")?;
        iteration.attempt = Some(attempt);
        journal.enter(repo, Phase::CommittingUndo)?;
        repo.git(&["revert", "--no-commit", "HEAD"])
            .context("could not undo the attempt")?;
        journal.enter(repo, Phase::CommittingIteration)?;
    }
    let mut block = Block::default();
    iteration.write(&mut block);
    let message = render_message(&subject(&iteration, &kernel_name), notes, &block);
    let id = repo
        .commit(&message, !kept)
        .context("could not commit the iteration")?;
    Ok(Recorded { id, iteration })
}

/// Reads well in `git log --oneline`: what happened, by how much, and what was tried.
fn subject(it: &Iteration, kernel: &str) -> String {
    let result = match it.change_pct {
        Some(change) => format!("{} {:+.2}%", it.status, change),
        None => it.status.to_string(),
    };
    format!(
        "cutile-perf: {kernel} #{} {result}: {}",
        it.number, it.optimization
    )
}

fn next_action(it: &Iteration, history: &History) -> String {
    let step = "`git cutile-perf step \"<description>\"`";
    match it.decision {
        Decision::Continue => format!("kept; apply the next optimization (see `git cutile-perf next`) and run {step}"),
        Decision::LowerPriority => format!(
            "kept, but the gain is small; prefer an optimization of another kind next, then run {step}"
        ),
        Decision::TryNext => format!(
            "{}; the kernel is back to iteration {}. Try the next optimization, then run {step}",
            match it.status {
                Status::Crash => "crashed",
                _ => "reverted",
            },
            history.current_baseline().number
        ),
        Decision::Stop => {
            "the loop stops here (see the reason). Report the table; run step with --continue only if the user wants more"
                .to_string()
        }
        Decision::Escalate => {
            "escalate to the user: the bottleneck needs a human decision (step --continue resumes)".to_string()
        }
    }
}
