//! What the loop expects of whoever drives it now, computed from the loop's state alone.
//!
//! An agent reads `next_action` from `status --json` and from the report of every verb that changes the
//! session (`start`, `step`, `repair`) instead of inferring the state from prose; the text output ends
//! with the same in a few words for a person. One pure function decides it, so every verb says the same
//! thing.

use serde::Serialize;

use anyhow::Result;

use crate::features::report;
use crate::record::audit;
use crate::record::history::{History, Variant};
use crate::record::session::NO_LETTER;
use crate::rules::decision::LoopState;
use crate::rules::decision::{Cause, Decision, Status};
use crate::rules::references::{self, Suggestion};
use crate::system::git::Repo;

/// The step an agent runs after its edit: with the playbook letter it follows (the suggested one, or a
/// placeholder where a class would suggest one) and a placeholder for the bottleneck it targets, since a
/// step without `--cause` may profile the kernel and one without `--opt` leaves the letter on offer;
/// `resume` adds `--continue`, which only the user's word allows.
fn step_command(opt: Option<&str>, resume: bool) -> String {
    format!(
        "git cutile-perf step{} --json{} --cause <CAUSE> \"<what you changed>\"",
        if resume { " --continue" } else { "" },
        opt.map_or(String::new(), |letter| format!(" --opt {letter}"))
    )
}

/// What the loop expects next, with the facts an agent needs to do it.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// Apply one optimization within the allowed paths, then `step`.
    EditAndStep,
    /// The rules stopped the loop at `iteration`; `resume` continues it if the user wants more.
    Stopped {
        iteration: u32,
        why: String,
        resume: String,
    },
    /// The loop escalated to the user at `iteration`: the cause needs a human decision.
    Escalate {
        iteration: u32,
        cause: Option<Cause>,
        why: String,
        resume: String,
    },
    /// A killed command left its work half-done, or the branch holds commits the tool did not make:
    /// `repair` finishes, undoes or takes them back.
    Repair { unfinished: String },
    /// Another command of this tool is running on the repository now.
    Wait { running: String },
    /// No session is checked out.
    Start,
}

impl Expect {
    pub fn kind(&self) -> &'static str {
        match self {
            Expect::EditAndStep => "edit-and-step",
            Expect::Stopped { .. } => "stopped",
            Expect::Escalate { .. } => "escalate",
            Expect::Repair { .. } => "repair",
            Expect::Wait { .. } => "wait",
            Expect::Start => "start",
        }
    }
}

/// [`Expect`] and one sentence for an agent, `line` for a person (the last line of the text output), with
/// the session's
/// `letters` (`next`'s suggestions in priority order, neither tried nor skipped; empty without a class
/// or outside a session) and `variants` (the reverted letters that may be tried once more on the shapes
/// that gained). Every kind serializes the same keys, null where a kind has no value for one.
#[derive(Debug, Clone, PartialEq)]
pub struct NextAction {
    pub expect: Expect,
    pub letters: Vec<String>,
    pub variants: Vec<Variant>,
    pub sentence: String,
    /// The same in a few words for a person, with the command to run; `--json` carries `sentence`.
    pub line: String,
}

/// The keys every next action carries, whatever its kind.
#[derive(Serialize)]
struct Keys<'a> {
    kind: &'static str,
    sentence: &'a str,
    letters: &'a [String],
    variants: &'a [Variant],
    iteration: Option<u32>,
    why: Option<&'a str>,
    cause: Option<Cause>,
    resume: Option<&'a str>,
    unfinished: Option<&'a str>,
    running: Option<&'a str>,
}

impl Serialize for NextAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut keys = Keys {
            kind: self.expect.kind(),
            sentence: &self.sentence,
            letters: &self.letters,
            variants: &self.variants,
            iteration: None,
            why: None,
            cause: None,
            resume: None,
            unfinished: None,
            running: None,
        };
        match &self.expect {
            Expect::Stopped {
                iteration,
                why,
                resume,
            } => {
                (keys.iteration, keys.why) = (Some(*iteration), Some(why.as_str()));
                keys.resume = Some(resume.as_str());
            }
            Expect::Escalate {
                iteration,
                cause,
                why,
                resume,
            } => {
                (keys.iteration, keys.why) = (Some(*iteration), Some(why.as_str()));
                (keys.resume, keys.cause) = (Some(resume.as_str()), *cause);
            }
            Expect::Repair { unfinished } => keys.unfinished = Some(unfinished.as_str()),
            Expect::Wait { running } => keys.running = Some(running.as_str()),
            Expect::EditAndStep | Expect::Start => {}
        }
        keys.serialize(serializer)
    }
}

/// Where the loop stands, as a verb has read it.
#[derive(Debug, Clone, Copy)]
pub enum Situation<'a> {
    /// No session on the checked-out branch.
    NoSession,
    /// A journal is left: by a running command (`running`) or by a killed one, described in words.
    Unfinished {
        running: bool,
        what: &'a str,
    },
    /// The session's branch holds commits the tool did not make (`audit::foreign_findings`, one a line).
    Foreign(&'a [String]),
    Session(&'a History),
}

/// The situation of a session as its branch stands: [`Situation::Foreign`] while the branch holds
/// commits the tool did not make (`findings` keeps their lines alive), else [`Situation::Session`],
/// `history` given the paired estimates its evidence notes hold, which its variants compare.
pub fn of_session<'a>(
    repo: &Repo,
    history: &'a mut History,
    findings: &'a mut Vec<String>,
) -> Result<Situation<'a>> {
    *findings = audit::foreign_findings(repo, history)?
        .iter()
        .map(ToString::to_string)
        .collect();
    history.estimates = report::estimates(repo, history)?;
    history.edited = edited(repo, &history.session.allowed)?;
    Ok(match findings.is_empty() {
        true => Situation::Session(history),
        false => Situation::Foreign(findings),
    })
}

/// The `allowed` paths the work tree changes against HEAD.
fn edited(repo: &Repo, allowed: &[String]) -> Result<Vec<String>> {
    let mut args = vec!["diff", "--name-only", "-z", "HEAD", "--"];
    args.extend(allowed.iter().map(String::as_str));
    let changed = repo.git(&args)?;
    Ok(changed
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect())
}

/// What the loop expects now.
pub fn next_action(situation: Situation) -> NextAction {
    let outside = |expect: Expect, sentence: &str| NextAction {
        line: match &expect {
            Expect::Start => {
                "start a session with `git cutile-perf start <kernel>` (`git cutile-perf \
                              inspect --all` lists the kernels)"
                    .to_string()
            }
            Expect::Wait { .. } => {
                "wait for the running command, then `git cutile-perf status`".to_string()
            }
            _ => "`git cutile-perf repair` (your edit is kept)".to_string(),
        },
        expect,
        letters: Vec::new(),
        variants: Vec::new(),
        sentence: sentence.to_string(),
    };
    match situation {
        Situation::NoSession => outside(
            Expect::Start,
            "No session is checked out: ask the user which kernel to optimize, run \
             `git cutile-perf inspect <kernel> --json` to see what a session of it would allow and run, then \
             `git cutile-perf start <kernel> --json`.",
        ),
        Situation::Unfinished {
            running: true,
            what,
        } => outside(
            Expect::Wait {
                running: what.to_string(),
            },
            "Another `git cutile-perf` command is running here: wait for it to end, then run \
             `git cutile-perf status --json`.",
        ),
        Situation::Unfinished {
            running: false,
            what,
        } => outside(
            Expect::Repair {
                unfinished: what.to_string(),
            },
            "A killed command left its work half-done: run `git cutile-perf repair --json` (the edit is \
             kept), then follow its next action.",
        ),
        Situation::Foreign(findings) => outside(
            Expect::Repair {
                unfinished: format!("commits the tool did not make: {}", findings.join("; ")),
            },
            "The session branch holds commits the tool did not make, and nothing is recorded over them: run \
             `git cutile-perf repair --json`, which takes their change back in a commit of its own (they stay \
             in the history), then follow its next action. Never commit on a session branch yourself.",
        ),
        Situation::Session(history) => in_session(history),
    }
}

fn in_session(history: &History) -> NextAction {
    let suggestions = history.session.class.map_or_else(Vec::new, |class| {
        references::next_optimizations(class, &history.settled_letters())
    });
    let opt = match (suggestions.first(), history.session.class) {
        (Some(first), _) => Some(first.letter.as_str()),
        // `next --class` would suggest one
        (None, None) => Some("<LETTER>"),
        // every letter is settled: the agent's own plan follows none
        (None, Some(_)) => Some(NO_LETTER),
    };
    let letters: Vec<String> = suggestions.iter().map(|s| s.letter.clone()).collect();
    let variants = history.variants();
    match history.loop_state() {
        (LoopState::Stopped, Some(last)) => NextAction {
            line: format!(
                "the loop stopped at iteration {}; `git cutile-perf step --continue --opt {} \"<what you \
                 changed>\"` goes on",
                last.number,
                opt.unwrap_or(NO_LETTER)
            ),
            letters,
            variants,
            sentence: format!(
                "The rules stopped the loop at iteration {}: {}. Report the results (`git cutile-perf table`) \
                 to the user and stop; resume with `step --continue` only if the user asks for more.",
                last.number, last.reason
            ),
            expect: Expect::Stopped {
                iteration: last.number,
                why: last.reason.clone(),
                resume: step_command(opt, true),
            },
        },
        (LoopState::Escalated, Some(last)) => NextAction {
            line: format!(
                "iteration {} needs your decision; `git cutile-perf step --continue --opt {} \"<what you \
                 changed>\"` goes on",
                last.number,
                opt.unwrap_or(NO_LETTER)
            ),
            letters,
            variants,
            sentence: format!(
                "Iteration {} escalated to the user ({}): {}. Stop and ask the user how to proceed; \
                 `step --continue` resumes only on their word.",
                last.number,
                last.cause
                    .map_or("cause unknown".to_string(), |c| format!("a {c} bottleneck")),
                last.reason
            ),
            expect: Expect::Escalate {
                iteration: last.number,
                cause: last.cause,
                why: last.reason.clone(),
                resume: step_command(opt, true),
            },
        },
        _ => edit_and_step(history, &suggestions, opt, variants),
    }
}

fn edit_and_step(
    history: &History,
    suggestions: &[Suggestion],
    opt: Option<&str>,
    variants: Vec<Variant>,
) -> NextAction {
    let (_, last) = history
        .iterations
        .last()
        .expect("a history has its baseline");
    let session = &history.session;
    let outcome = match (last.number, last.status, last.decision) {
        (0, _, _) => "The baseline is recorded".to_string(),
        (n, Status::Keep, Decision::LowerPriority) => {
            format!(
                "Iteration {n} was kept with a small gain; prefer another kind of optimization next"
            )
        }
        (n, Status::Keep, _) => format!("Iteration {n} was kept"),
        (n, status, _) => format!(
            "Iteration {n} was {} and undone (the kernel is as at iteration {})",
            match status {
                Status::Crash => "a crash",
                _ => "reverted",
            },
            history.current_baseline().number
        ),
    };
    let pick = match (suggestions.first(), session.class) {
        (Some(first), Some(class)) => format!(
            "; {} ({}) comes first for this {class}-bound kernel (`git cutile-perf refs playbook {}`; \
             if it cannot apply here, take the next letter `git cutile-perf next` lists)",
            first.letter, first.title, first.letter
        ),
        (None, Some(_)) => {
            "; every playbook letter is tried or skipped: write your own plan".to_string()
        }
        (_, None) => "; `git cutile-perf next --class <class>` suggests what".to_string(),
    };
    let also: String = variants
        .iter()
        .map(|v| format!(" Or a {}.", v.sentence()))
        .collect();
    let step =
        |letter: &str| format!("`git cutile-perf step --opt {letter} \"<what you changed>\"`");
    let line = match (history.edited.is_empty(), suggestions.first()) {
        (false, _) => format!("step the change in the work tree: {}", step("<LETTER>")),
        (true, Some(first)) => format!(
            "one optimization ({}: {}), then {}",
            first.letter,
            first.title,
            step(&first.letter)
        ),
        (true, None) => format!("one optimization, then {}", step(opt.unwrap_or(NO_LETTER))),
    };
    let sentence = match history.edited.as_slice() {
        [] => format!(
            "{outcome}. Apply ONE optimization to {}{pick}, then run `{}`, <CAUSE> being the bottleneck it \
             targets (memory, compute or latency).{also}",
            session.allowed.join(" or "),
            step_command(opt, false)
        ),
        edited => format!(
            "{outcome}. The work tree already changes {} and no step has recorded it (an edit in progress, \
             or a step that was interrupted): make no second change; once it is ONE optimization, run `{}` \
             with the letter it follows, <CAUSE> being the bottleneck it targets (memory, compute or \
             latency).",
            edited.join(" and "),
            step_command(Some("<LETTER>"), false)
        ),
    };
    NextAction {
        line,
        sentence,
        expect: Expect::EditAndStep,
        letters: suggestions.iter().map(|s| s.letter.clone()).collect(),
        variants,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::record::session::{Iteration, Skip};
    use crate::rules::decision::Decision;
    use crate::rules::kernel_class::KernelClass;
    use clap::Parser;

    /// A history of `iterations` whose one allowed path is `k.py`.
    fn history(iterations: Vec<Iteration>) -> History {
        let mut history = crate::record::history::tests::history(iterations);
        history.session.allowed = vec!["k.py".into()];
        history
    }

    fn baseline() -> Iteration {
        iteration(0, Status::Keep, None, Decision::Continue)
    }

    fn lettered(mut it: Iteration, letter: &str) -> Iteration {
        it.letter = Some(letter.into());
        it
    }

    #[test]
    fn after_the_baseline_the_class_first_letter_is_suggested() {
        let action = next_action(Situation::Session(&history(vec![baseline()])));
        assert_eq!(
            action,
            NextAction {
                expect: Expect::EditAndStep,
                letters: "A B K G E F C J H I D L"
                    .split(' ')
                    .map(String::from)
                    .collect(),
                variants: vec![],
                sentence: "The baseline is recorded. Apply ONE optimization to k.py; A (TMA loads and stores \
                           instead of gather/scatter) comes first for this memory-bound kernel (`git cutile-perf \
                           refs playbook A`; if it cannot apply here, take the next letter `git cutile-perf next` \
                           lists), then run `git cutile-perf step --json --opt A --cause <CAUSE> \"<what you changed>\"`, \
                           <CAUSE> being the bottleneck it targets (memory, compute or latency)."
                    .to_string(),
                line: "one optimization (A: TMA loads and stores instead of gather/scatter), then `git \
                       cutile-perf step --opt A \"<what you changed>\"`"
                    .to_string(),
            }
        );
    }

    /// An edit no step recorded (a step interrupted by Ctrl-C leaves one) is never met by "apply ONE
    /// optimization", which would invite a second change into the same step.
    #[test]
    fn an_edit_not_yet_stepped_is_stepped_not_added_to() {
        let mut edited = history(vec![baseline()]);
        edited.edited = vec!["k.py".into()];
        let action = next_action(Situation::Session(&edited));
        assert_eq!(action.expect, Expect::EditAndStep);
        assert!(
            !action.sentence.contains("Apply ONE"),
            "{}",
            action.sentence
        );
        assert!(
            action.sentence.starts_with(
                "The baseline is recorded. The work tree already changes k.py and no step has recorded it"
            ),
            "{}",
            action.sentence
        );
        assert!(
            action.sentence.contains("make no second change"),
            "{}",
            action.sentence
        );
    }

    #[test]
    fn a_revert_names_the_iteration_the_kernel_is_back_to_and_skips_tried_letters() {
        let its = vec![
            baseline(),
            lettered(
                iteration(1, Status::Keep, Some(-6.0), Decision::Continue),
                "A",
            ),
            lettered(
                iteration(2, Status::Revert, Some(3.0), Decision::TryNext),
                "B",
            ),
        ];
        let action = next_action(Situation::Session(&history(its)));
        assert_eq!(action.expect, Expect::EditAndStep);
        assert_eq!(action.letters[..2], ["K".to_string(), "G".to_string()]);
        assert!(
            action.sentence.starts_with(
                "Iteration 2 was reverted and undone (the kernel is as at iteration 1). Apply ONE \
                 optimization to k.py; K (Batching small copy kernels) comes first"
            ),
            "{}",
            action.sentence
        );
    }

    #[test]
    fn skipped_letters_leave_the_list_and_a_split_revert_is_offered_as_a_variant() {
        let mut base = baseline();
        base.configs = crate::rules::verdict::tests::run(&[1.0, 1.0]);
        let mut split = lettered(
            iteration(1, Status::Revert, Some(1.0), Decision::TryNext),
            "G",
        );
        split.configs = crate::rules::verdict::tests::run(&[0.97, 1.05]);
        let mut h = history(vec![base, split]);
        h.skipped = ["A", "B"]
            .map(|letter| Skip {
                letter: letter.into(),
                why: "w".into(),
            })
            .to_vec();
        let action = next_action(Situation::Session(&h));
        assert_eq!(
            (
                action.expect.clone(),
                action.letters.clone(),
                action.variants.clone()
            ),
            (
                Expect::EditAndStep,
                "K E F C J H I D L".split(' ').map(String::from).collect(),
                vec![Variant {
                    letter: "G".into(),
                    iteration: 1,
                    faster: vec!["t0".into()],
                    slower: vec!["t1".into()],
                }],
            )
        );
        assert_eq!(
            action.sentence,
            "Iteration 1 was reverted and undone (the kernel is as at iteration 0). Apply ONE optimization to \
             k.py; K (Batching small copy kernels) comes first for this memory-bound kernel (`git cutile-perf \
             refs playbook K`; if it cannot apply here, take the next letter `git cutile-perf next` lists), then \
             run `git cutile-perf step --json --opt K --cause <CAUSE> \"<what you changed>\"`, <CAUSE> being the \
             bottleneck it targets (memory, compute or latency). Or a variant of G: iteration 1 \
             sped up t0 and slowed t1; try it on the shapes that gained (`step --opt G` again)."
        );
    }

    #[test]
    fn a_crash_and_a_small_gain_say_so() {
        let crash = history(vec![
            baseline(),
            iteration(1, Status::Crash, None, Decision::TryNext),
        ]);
        assert!(
            next_action(Situation::Session(&crash))
                .sentence
                .starts_with(
                    "Iteration 1 was a crash and undone (the kernel is as at iteration 0). "
                )
        );
        let small = history(vec![
            baseline(),
            iteration(1, Status::Keep, Some(-3.0), Decision::LowerPriority),
        ]);
        assert!(
            next_action(Situation::Session(&small))
                .sentence
                .starts_with("Iteration 1 was kept with a small gain; prefer another kind of optimization next. ")
        );
    }

    #[test]
    fn without_a_class_no_letter_is_suggested() {
        let mut h = history(vec![baseline()]);
        h.session.class = None;
        let action = next_action(Situation::Session(&h));
        assert_eq!(action.expect, Expect::EditAndStep);
        assert!(action.letters.is_empty() && action.variants.is_empty());
        assert_eq!(
            action.sentence,
            "The baseline is recorded. Apply ONE optimization to k.py; `git cutile-perf next --class <class>` \
             suggests what, then run `git cutile-perf step --json --opt <LETTER> --cause <CAUSE> \"<what you \
             changed>\"`, <CAUSE> being the bottleneck it targets (memory, compute or latency)."
        );
    }

    #[test]
    fn every_letter_tried_leaves_the_agent_its_own_plan() {
        let mut h = history(vec![baseline()]);
        h.session.class = Some(KernelClass::Compute);
        for (n, (letter, _)) in references::playbook_entries().into_iter().enumerate() {
            let n = n as u32 + 1;
            h.iterations.push((
                format!("c{n}"),
                lettered(
                    iteration(n, Status::Revert, Some(1.0), Decision::TryNext),
                    letter,
                ),
            ));
        }
        let action = next_action(Situation::Session(&h));
        assert_eq!(action.expect, Expect::EditAndStep);
        assert!(action.letters.is_empty() && action.variants.is_empty());
        assert!(action.sentence.contains(
            "; every playbook letter is tried or skipped: write your own plan, then run `git cutile-perf \
             step --json --opt none --cause <CAUSE> \"<what you changed>\"`"
        ));
    }

    #[test]
    fn a_stop_reports_and_waits_for_the_user() {
        let mut stop = iteration(3, Status::Keep, Some(-1.0), Decision::Stop);
        stop.reason = "1.00% faster overall (< 2%)".into();
        let action = next_action(Situation::Session(&history(vec![baseline(), stop])));
        assert_eq!(
            action,
            NextAction {
                expect: Expect::Stopped {
                    iteration: 3,
                    why: "1.00% faster overall (< 2%)".into(),
                    resume: "git cutile-perf step --continue --json --opt A --cause <CAUSE> \"<what you \
                             changed>\""
                        .into(),
                },
                letters: "A B K G E F C J H I D L"
                    .split(' ')
                    .map(String::from)
                    .collect(),
                variants: vec![],
                sentence: "The rules stopped the loop at iteration 3: 1.00% faster overall (< 2%). Report the \
                           results (`git cutile-perf table`) to the user and stop; resume with `step --continue` \
                           only if the user asks for more."
                    .into(),
                line: "the loop stopped at iteration 3; `git cutile-perf step --continue --opt A \"<what you \
                       changed>\"` goes on"
                    .into(),
            }
        );
    }

    #[test]
    fn an_escalation_carries_its_cause() {
        let mut escalated = iteration(1, Status::Keep, Some(-6.0), Decision::Escalate);
        escalated.cause = Some(Cause::Scheduling);
        escalated.reason = "6.00% faster overall; a scheduling root cause goes to the user".into();
        let action = next_action(Situation::Session(&history(vec![baseline(), escalated])));
        assert_eq!(
            action.expect,
            Expect::Escalate {
                iteration: 1,
                cause: Some(Cause::Scheduling),
                why: "6.00% faster overall; a scheduling root cause goes to the user".into(),
                resume: "git cutile-perf step --continue --json --opt A --cause <CAUSE> \"<what you changed>\""
                    .into(),
            }
        );
        assert_eq!(
            action.sentence,
            "Iteration 1 escalated to the user (a scheduling bottleneck): 6.00% faster overall; a scheduling \
             root cause goes to the user. Stop and ask the user how to proceed; `step --continue` resumes only \
             on their word."
        );
    }

    #[test]
    fn without_a_session_start_and_with_a_journal_repair_or_wait() {
        assert_eq!(next_action(Situation::NoSession).expect, Expect::Start);
        let left = next_action(Situation::Unfinished {
            running: false,
            what: "step on b was killed",
        });
        assert_eq!(
            left.expect,
            Expect::Repair {
                unfinished: "step on b was killed".into()
            }
        );
        assert!(
            left.sentence.starts_with(
                "A killed command left its work half-done: run `git cutile-perf repair"
            )
        );
        let running = next_action(Situation::Unfinished {
            running: true,
            what: "pid 7",
        });
        assert_eq!(
            running.expect,
            Expect::Wait {
                running: "pid 7".into()
            }
        );
    }

    /// One next action of every kind.
    fn every_kind() -> Vec<NextAction> {
        let mut stopped = iteration(1, Status::Keep, Some(-1.0), Decision::Stop);
        stopped.reason = "r".into();
        let mut escalated = iteration(1, Status::Keep, Some(-6.0), Decision::Escalate);
        escalated.reason = "r".into();
        let findings = ["unrecorded-change abc: changes k.py".to_string()];
        vec![
            next_action(Situation::NoSession),
            next_action(Situation::Unfinished {
                running: false,
                what: "x",
            }),
            next_action(Situation::Unfinished {
                running: true,
                what: "x",
            }),
            next_action(Situation::Foreign(&findings)),
            next_action(Situation::Session(&history(vec![baseline()]))),
            next_action(Situation::Session(&history(vec![baseline(), stopped]))),
            next_action(Situation::Session(&history(vec![baseline(), escalated]))),
        ]
    }

    #[test]
    fn every_kind_carries_the_same_keys() {
        let keys = |action: &NextAction| -> Vec<String> {
            let json = serde_json::to_value(action).unwrap();
            json.as_object().unwrap().keys().cloned().collect()
        };
        let actions = every_kind();
        let first = keys(&actions[0]);
        assert!(first.contains(&"letters".to_string()) && first.contains(&"variants".to_string()));
        for action in &actions {
            assert_eq!(keys(action), first, "{}", action.expect.kind());
        }
        let stopped = serde_json::to_value(&actions[5]).unwrap();
        assert_eq!(stopped["kind"], "stopped");
        assert_eq!(stopped["letters"][0], "A");
    }

    #[test]
    fn commits_the_tool_did_not_make_are_repaired_by_the_tool() {
        let findings = ["unrecorded-change abc: changes k.py".to_string()];
        let action = next_action(Situation::Foreign(&findings));
        assert_eq!(
            action.expect,
            Expect::Repair {
                unfinished: "commits the tool did not make: unrecorded-change abc: changes k.py"
                    .into()
            }
        );
        assert!(
            action
                .sentence
                .contains("run `git cutile-perf repair --json`, which takes their change back"),
            "{}",
            action.sentence
        );
    }

    #[test]
    fn serializes_with_its_kind_beside_the_sentence() {
        let json = serde_json::to_value(next_action(Situation::NoSession)).unwrap();
        assert_eq!(json["kind"], "start");
        assert!(json["sentence"].as_str().unwrap().starts_with("No session"));
        let json = serde_json::to_value(next_action(Situation::Unfinished {
            running: false,
            what: "x",
        }))
        .unwrap();
        assert_eq!(
            (json["kind"].as_str(), json["unfinished"].as_str()),
            (Some("repair"), Some("x"))
        );
    }

    /// Every command a next action names, in its sentence or as its `resume`, with its placeholders
    /// filled in as an agent would.
    fn commands(action: &NextAction) -> Vec<String> {
        let resume = match &action.expect {
            Expect::Stopped { resume, .. } | Expect::Escalate { resume, .. } => {
                Some(resume.clone())
            }
            _ => None,
        };
        action
            .sentence
            .split('`')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .chain(resume)
            .filter(|c| c.starts_with("git cutile-perf "))
            .collect()
    }

    #[test]
    fn every_command_of_every_kind_parses() {
        let mut classless = history(vec![baseline()]);
        classless.session.class = None;
        let mut settled = history(vec![baseline()]);
        settled.skipped = references::playbook_entries()
            .into_iter()
            .map(|(letter, _)| Skip {
                letter: letter.into(),
                why: "w".into(),
            })
            .collect();
        let mut actions = every_kind();
        actions.push(next_action(Situation::Session(&classless)));
        actions.push(next_action(Situation::Session(&settled)));
        let mut parsed = 0;
        for action in &actions {
            for command in commands(action) {
                let filled = [
                    ("<kernel>", "rms_norm"),
                    ("<class>", "memory"),
                    ("<LETTER>", "B"),
                    ("<CAUSE>", "memory"),
                ]
                .iter()
                .fold(command.clone(), |c, (from, to)| c.replace(from, to));
                let words = shlex::split(&filled["git cutile-perf ".len()..]).unwrap();
                let args = std::iter::once("git-cutile-perf".to_string()).chain(words);
                if let Err(e) = crate::verbs::cli::Cli::try_parse_from(args) {
                    panic!("`{command}` does not parse: {e}");
                }
                parsed += 1;
            }
        }
        assert!(parsed >= 12, "{parsed}");
    }
}
