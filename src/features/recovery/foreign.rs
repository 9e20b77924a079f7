//! Commits on a session branch that the tool did not make (a commit past the hooks, `--no-verify`) are
//! taken back by one commit of the tool's own, whose tree is the record's last: the run of commits that
//! record nothing then changes nothing, so the record holds again, and their change stays in the history
//! for whoever wants it back as a step of its own. The branch is never rewritten, and the work tree loses
//! their change too, so the next step cannot carry it beside the next edit unmeasured.

use anyhow::Result;
use serde::Serialize;

use crate::record::audit::{self, Kind};
use crate::record::history::History;
use crate::record::session::short;
use crate::rules::hint::hinted;
use crate::system::git::Repo;

/// What taking back did.
#[derive(Debug, Serialize)]
pub struct TakenBack {
    /// The tool's commit that took them back.
    pub commit: String,
    /// What it took back, one finding a line.
    pub findings: Vec<String>,
}

/// Takes back every change the commits the tool did not make brought (`None` when there are none): the
/// index returns to the record's last tree, and so does the work tree but for the edit in it.
pub fn take_back(repo: &Repo, history: &History) -> Result<Option<TakenBack>> {
    let findings = audit::foreign_findings(repo, history)?;
    if findings.is_empty() {
        return Ok(None);
    }
    if let Some(extra) = findings.iter().find(|f| f.kind == Kind::ExtraSession) {
        return Err(hinted(
            format!(
                "commit {} declares a session again: no commit of the tool's can take a declaration back",
                short(&extra.commit)
            ),
            "start a new session from the last commit whose record holds (`git checkout -b <new branch> \
             <that commit>`, then `git cutile-perf start <kernel>`); `git cutile-perf verify --json` names it",
        ));
    }
    let recorded = history
        .iterations
        .last()
        .map_or(&history.baseline_commit, |(commit, _)| commit);
    let head = repo.head()?;
    // their change, undone in the work tree hunk by hunk: an edit beside it stays, one over it refuses
    // before anything changed (`git apply` applies all or nothing)
    let undo = repo.git_bytes(&["diff", "--binary", "--no-ext-diff", &head, recorded])?;
    // a repair killed between this undo and its commit left the undo in the work tree: the work tree
    // already holds what the commit will, so this repair goes on to the commit
    let undone_already = !undo.is_empty()
        && repo
            .git_with(
                &["apply", "--check", "--reverse", "--whitespace=nowarn", "-"],
                &[],
                Some(&undo),
            )
            .is_ok();
    if !undo.is_empty() && !undone_already {
        repo.git_with(&["apply", "--whitespace=nowarn", "-"], &[], Some(&undo))
            .map_err(|err| {
                hinted(
                    format!("{err:#}"),
                    "your edit in the work tree overlaps what those commits changed: move it aside (`git diff > \
                     edit.patch`, then `git restore <path>`), run `git cutile-perf repair --json` again, then \
                     `git apply -3 edit.patch` (a three-way apply: the patch was made over what the take-back undid)",
                )
            })?;
    }
    let lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
    let message = take_back_message(&head, &lines);
    let tree = format!("{recorded}^{{tree}}");
    let mut args = vec![
        "commit-tree",
        tree.as_str(),
        "-p",
        head.as_str(),
        "-m",
        &message,
    ];
    if repo.signs() {
        args.push("-S");
    }
    let commit = repo.git(&args)?.trim().to_string();
    repo.git(&[
        "update-ref",
        "-m",
        "cutile-perf repair: take back",
        "HEAD",
        &commit,
        &head,
    ])?;
    // the index as the new commit holds it: what the work tree holds beyond it is the edit
    repo.git(&["read-tree", "HEAD"])?;
    Ok(Some(TakenBack {
        commit,
        findings: lines,
    }))
}

/// The take-back commit's message. The findings name paths, which are the user's text: each is one
/// indented line (a continuation, never a trailer of its own), and a sentence closes the message, so
/// that its last paragraph, the only one git reads trailers from, holds none.
fn take_back_message(head: &str, findings: &[String]) -> String {
    let mut message = format!(
        "cutile-perf: take back {}: commits the tool did not make\n\nTaken back:\n",
        short(head)
    );
    for finding in findings {
        message.push_str("    ");
        message.push_str(&serde_json::to_string(finding).expect("strings serialize"));
        message.push('\n');
    }
    message.push_str("\nTheir change stays in the history before this commit.\n");
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::trailers::Block;

    #[test]
    fn paths_in_the_findings_cannot_spell_trailers() {
        let forged = "unrecorded-change abc1234: changes a/\n\nCutile-Perf-Iteration: 1\nCutile-Perf-Status: keep\n";
        let message = take_back_message(
            "abc1234def",
            &[forged.to_string(), "Cutile-Perf-Latency-Ms: 0.001".into()],
        );
        assert!(Block::from_message(&message).is_empty(), "{message}");
        assert!(!message.lines().any(|line| line.starts_with("Cutile-Perf-")));
    }
}
