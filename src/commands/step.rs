//! `step`: one iteration: check, test, benchmark, decide, commit.
//!
//! A kept change is committed as is. A reverted or crashed one is committed first (so it stays in the
//! history), then undone by the iteration commit, which carries the trailers: the branch's tree returns
//! exactly to what it was, and `git show <iteration>^` shows what was tried.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use super::{Interrupted, require_history, sandbox, write_table};
use crate::cli::StepArgs;
use crate::decision::{self, Correctness, Decision, Outcome, Status};
use crate::git::Repo;
use crate::guard;
use crate::pytest::{self, Pytest};
use crate::records::Measurement;
use crate::session::{History, Iteration, fmt_change, fmt_ms, short};
use crate::stats::{ConfigChange, compare};
use crate::trailers::{Block, render_message};
use crate::ui;

/// What `step --json` prints.
#[derive(Serialize)]
struct Report<'a> {
    iteration: u32,
    optimization: &'a str,
    opt: Option<&'a str>,
    cause: Option<&'static str>,
    status: Status,
    correctness: Correctness,
    latency_ms: Option<f64>,
    baseline_ms: f64,
    change_pct: Option<f64>,
    decision: Decision,
    reason: &'a str,
    no_gain: u32,
    configs: &'a [ConfigChange],
    commit: &'a str,
    attempt: Option<&'a str>,
    table: String,
    next: String,
}

pub fn run(repo: &Repo, args: &StepArgs) -> Result<()> {
    let StepArgs {
        description,
        notes,
        budget,
        continue_anyway,
        cause,
        opt,
        output,
    } = args;
    let letter = opt.as_deref().map(playbook_letter).transpose()?;
    let history = require_history(repo)?;
    let session = &history.session;
    if let Some(halted) = history.halted_by().filter(|_| !continue_anyway) {
        bail!(
            "the loop has {} at iteration {}: {}\nhint: pass --continue to try another optimization anyway",
            if halted.decision == Decision::Escalate {
                "escalated to you"
            } else {
                "stopped"
            },
            halted.number,
            halted.reason
        );
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

    let number = history.next_number();
    let baseline = history.current_baseline();
    let runner = Pytest {
        python: &session.python,
        root: &repo.root,
        test: &session.test,
        filter: session.filter.as_deref(),
        sandbox: sandbox(repo),
        deadline: Instant::now() + *budget,
    };
    let interrupted = || Interrupted("nothing was recorded; your changes are as you left them");
    let mut configs: Vec<Measurement> = Vec::new();
    let mut comparison = None;
    let (correctness, crash) = match runner.correctness()? {
        pytest::Correctness::Interrupted => return Err(interrupted().into()),
        pytest::Correctness::Fail { failed } => {
            ui::progress_line(&format!("correctness FAIL: {}", failed.join(", ")));
            (Correctness::Fail, None)
        }
        pytest::Correctness::Crash(why) => (Correctness::Fail, Some(why)),
        pytest::Correctness::Pass { .. } => match runner.benchmark(session.statistic)? {
            pytest::Benchmark::Interrupted => return Err(interrupted().into()),
            pytest::Benchmark::Crash(why) => (Correctness::Pass, Some(why)),
            pytest::Benchmark::Measured(measured) => match compare(&baseline.configs, &measured) {
                Ok(cmp) => {
                    configs = measured;
                    comparison = Some(cmp);
                    (Correctness::Pass, None)
                }
                Err((pass, test)) => (
                    Correctness::Pass,
                    Some(format!("config {test} {pass} gave no record")),
                ),
            },
        },
    };
    let outcome = match (&crash, &comparison) {
        (Some(why), _) => Outcome::Crashed(why),
        (None, Some(cmp)) => Outcome::Measured(cmp),
        (None, None) => Outcome::CorrectnessFailed,
    };
    let verdict = decision::decide(
        outcome,
        number,
        history.no_gain_count(),
        *cause,
        &session.thresholds,
    );
    let mut iteration = Iteration {
        number,
        optimization: crate::trailers::one_line(description),
        letter,
        cause: *cause,
        latency_ms: comparison.as_ref().map(|c| c.latency_ms),
        correctness,
        status: verdict.status,
        baseline_ms: baseline.latency_ms.unwrap_or(baseline.baseline_ms),
        change_pct: comparison.as_ref().map(|c| c.change_pct()),
        decision: verdict.decision,
        reason: verdict.reason.clone(),
        configs,
        attempt: None,
    };
    let commit = record(repo, &history, &mut iteration, &changed, notes.as_deref())?;
    let history = require_history(repo)?;
    let table = write_table(repo, &history)?;
    let next = next_action(&iteration, &history);
    let config_changes = comparison.as_ref().map_or(&[][..], |c| &c.configs[..]);

    if output.json {
        return ui::print_json(&Report {
            iteration: number,
            optimization: &iteration.optimization,
            opt: iteration.letter.as_deref(),
            cause: iteration.cause.map(|c| c.as_str()),
            status: iteration.status,
            correctness: iteration.correctness,
            latency_ms: iteration.latency_ms,
            baseline_ms: iteration.baseline_ms,
            change_pct: iteration.change_pct,
            decision: iteration.decision,
            reason: &iteration.reason,
            no_gain: verdict.no_gain,
            configs: config_changes,
            commit: &commit,
            attempt: iteration.attempt.as_deref(),
            table: table.display().to_string(),
            next,
        });
    }
    println!(
        "{} {}: {}  {} ms (baseline {} ms, {})  correctness {}  -> {}",
        ui::bold("iteration"),
        number,
        ui::word(iteration.status),
        fmt_ms(iteration.latency_ms),
        fmt_ms(Some(iteration.baseline_ms)),
        fmt_change(iteration.change_pct),
        ui::word(iteration.correctness),
        ui::word(iteration.decision),
    );
    println!("  reason   {}", iteration.reason);
    if let Some(worst) = comparison.as_ref().and_then(|c| c.worst()) {
        println!(
            "  slowest  {} {} {:+.2}%",
            worst.test, worst.pass, worst.change_pct
        );
    }
    println!(
        "  commit   {}{}",
        short(&commit),
        iteration
            .attempt
            .as_deref()
            .map_or(String::new(), |a| format!(
                " (the attempt is kept as {}: `git show {}`)",
                short(a),
                short(a)
            ))
    );
    println!("  table    {}", table.display());
    println!("next: {next}");
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

/// Commits the iteration; for a revert or crash, the attempt first, then its undoing with the trailers.
/// On any failure the index and work tree are put back as the user left them.
fn record(
    repo: &Repo,
    history: &History,
    iteration: &mut Iteration,
    changed: &[String],
    notes: Option<&str>,
) -> Result<String> {
    let mut add = vec!["--literal-pathspecs", "add", "-A", "--"];
    add.extend(changed.iter().map(String::as_str));
    let kernel_name = std::path::Path::new(&history.session.kernel)
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let unstage = || repo.git(&["reset", "-q"]).map(|_| ());
    repo.git(&add).or_else(|e| unstage().and(Err(e)))?;
    if iteration.status != Status::Keep {
        let subject = format!(
            "cutile-perf: attempt {} on {kernel_name}: {}",
            iteration.number, iteration.optimization
        );
        let attempt = repo
            .commit(&format!("{}\n", crate::trailers::one_line(&subject)), false)
            .or_else(|e| unstage().and(Err(e)))
            .context("could not commit the attempt; your changes are unstaged and untouched")?;
        iteration.attempt = Some(attempt.clone());
        let undo = repo.git(&["revert", "--no-commit", "HEAD"]);
        if let Err(e) = undo {
            restore_attempt(repo, &attempt)?;
            return Err(
                e.context("could not undo the attempt; your changes are back in the work tree")
            );
        }
    }
    let mut block = Block::default();
    iteration.write(&mut block);
    let message = render_message(&subject(iteration, &kernel_name), notes, &block);
    match repo.commit(&message, iteration.status != Status::Keep) {
        Ok(commit) => Ok(commit),
        Err(e) => {
            match &iteration.attempt {
                Some(attempt) => restore_attempt(repo, attempt)?,
                None => unstage()?,
            }
            Err(e.context(
                "could not commit the iteration; your changes are back in the work tree, unstaged",
            ))
        }
    }
}

/// Returns the work tree to the attempted change, uncommitted, as before `step`.
fn restore_attempt(repo: &Repo, attempt: &str) -> Result<()> {
    repo.git(&["reset", "-q", "--hard", attempt])?;
    repo.git(&["reset", "-q", "HEAD~1"])?;
    Ok(())
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
