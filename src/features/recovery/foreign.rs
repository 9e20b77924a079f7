//! Commits on a session branch that the tool did not make (a commit past the hooks, `--no-verify`) are
//! taken back by one commit of the tool's own, whose tree is the record's last: the run of commits that
//! record nothing then changes nothing, so the record holds again, and their change stays in the history.
//! The branch is never rewritten. Their change is given back as an edit not yet stepped: left in the work
//! tree where it is the only edit there and touches only the allowed paths (the next step measures it as
//! one change), else undone in the work tree and kept as a patch file in `sandbox/`, so that no step
//! carries it beside another edit unmeasured.
//!
//! A journal (`take-back.json`) written before anything moves lets the next `repair` finish a take-back
//! killed after its commit landed, or put the work tree back as it was and take back afresh.

use anyhow::Result;
use serde::Serialize;

use crate::record::audit::{self, Kind};
use crate::record::history::History;
use crate::record::journal::TakeBack;
use crate::record::sandbox::made_sandbox;
use crate::record::session::short;
use crate::rules::guard::{SANDBOX, disallowed};
use crate::rules::hint::hinted;
use crate::system::git::Repo;

/// What taking back did.
#[derive(Debug, Serialize)]
pub struct TakenBack {
    /// The tool's commit that took them back.
    pub commit: String,
    /// What it took back, one finding a line.
    pub findings: Vec<String>,
    /// Where their change is now.
    pub given_back: GivenBack,
}

/// Where the change of the commits taken back went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "to")]
pub enum GivenBack {
    /// Into the work tree, an edit not yet stepped.
    WorkTree,
    /// Into a patch file (relative to the work-tree root), which `apply` puts back in the work tree.
    Patch { path: String, apply: String },
}

impl GivenBack {
    fn of(journal: &TakeBack) -> GivenBack {
        match &journal.patch {
            None => GivenBack::WorkTree,
            Some(path) => GivenBack::Patch {
                path: path.clone(),
                apply: format!("git apply -3 {path}"),
            },
        }
    }
}

/// Takes back every change the commits the tool did not make brought (`None` when there are none), first
/// settling a take-back a kill cut short.
pub fn take_back(repo: &Repo, history: &History) -> Result<Option<TakenBack>> {
    if let Some(left) = TakeBack::load(repo)?
        && let Some(finished) = settle_cut_short(repo, &left)?
    {
        return Ok(Some(finished));
    }
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
        .map_or(&history.baseline_commit, |(commit, _)| commit)
        .clone();
    let head = repo.head()?;
    let changed = repo.changed_between(&recorded, &head)?;
    let stays =
        repo.all_changes()?.is_empty() && disallowed(&changed, &history.session.allowed).is_empty();
    let journal = TakeBack {
        findings: findings.iter().map(ToString::to_string).collect(),
        work_tree: crate::features::snapshot::work_tree(repo)?,
        patch: (!stays).then(|| format!("{SANDBOX}/taken-back-{}.patch", short(&head))),
        head,
        recorded,
    };
    journal.save(repo)?;
    if let Some(patch) = &journal.patch
        && let Err(err) = keep_as_patch(repo, &journal, patch)
    {
        // nothing moved: the work tree is as the user left it
        let _ = std::fs::remove_file(repo.root.join(patch));
        TakeBack::remove(repo)?;
        return Err(err);
    }
    let commit = commit(repo, &journal)?;
    finish(repo, &journal, commit).map(Some)
}

/// Writes their change to `patch`, then undoes it in the work tree hunk by hunk: an edit beside it stays,
/// one over it refuses before anything changed (`git apply` applies all or nothing).
fn keep_as_patch(repo: &Repo, journal: &TakeBack, patch: &str) -> Result<()> {
    let change = |from: &str, to: &str| {
        repo.git_bytes(&["diff", "--binary", "--no-ext-diff", from, to, "--"])
    };
    made_sandbox(repo)?;
    std::fs::write(
        repo.root.join(patch),
        change(&journal.recorded, &journal.head)?,
    )?;
    let undo = change(&journal.head, &journal.recorded)?;
    if undo.is_empty() {
        return Ok(());
    }
    repo.git_with(&["apply", "--whitespace=nowarn", "-"], &[], Some(&undo))
        .map(drop)
        .map_err(|err| {
            hinted(
                format!("{err:#}"),
                "your edit in the work tree overlaps what those commits changed: move it aside (`git diff > \
                 edit.patch`, then `git restore <path>`), run `git cutile-perf repair --json` again, then \
                 `git apply -3 edit.patch` (a three-way apply: the patch was made over what the take-back undid)",
            )
        })
}

/// The take-back commit, made and checked out (HEAD and the branch move; the index and the work tree do
/// not).
fn commit(repo: &Repo, journal: &TakeBack) -> Result<String> {
    let message = take_back_message(&journal.head, &journal.findings);
    let tree = format!("{}^{{tree}}", journal.recorded);
    let mut args = vec![
        "commit-tree",
        tree.as_str(),
        "-p",
        journal.head.as_str(),
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
        &journal.head,
    ])?;
    Ok(commit)
}

/// After the commit landed: the index as the commit holds it (what the work tree holds beyond it is the
/// edit), and the journal gone.
fn finish(repo: &Repo, journal: &TakeBack, commit: String) -> Result<TakenBack> {
    repo.git(&["read-tree", "HEAD"])?;
    TakeBack::remove(repo)?;
    Ok(TakenBack {
        commit,
        findings: journal.findings.clone(),
        given_back: GivenBack::of(journal),
    })
}

/// A take-back a kill cut short: finished where its commit landed; else its undo taken out of the work
/// tree again (`None`: the take-back begins afresh).
fn settle_cut_short(repo: &Repo, left: &TakeBack) -> Result<Option<TakenBack>> {
    let head = repo.head()?;
    let tree = |commit: &str| repo.git(&["rev-parse", &format!("{commit}^{{tree}}")]);
    if head != left.head {
        let parent = repo.git(&["rev-parse", "-q", "--verify", &format!("{head}^")]);
        let landed =
            parent.is_ok_and(|p| p.trim() == left.head) && tree(&head)? == tree(&left.recorded)?;
        if landed {
            return finish(repo, left, head).map(Some);
        }
        // the branch moved on since: nothing of that take-back is left to finish
        TakeBack::remove(repo)?;
        return Ok(None);
    }
    if let Some(patch) = &left.patch {
        put_back(repo, left)?;
        let _ = std::fs::remove_file(repo.root.join(patch));
    }
    TakeBack::remove(repo)?;
    Ok(None)
}

/// Takes the undo of a take-back killed before its commit out of the work tree: applied whole, it is
/// applied in reverse, which keeps what was edited since beside it; not begun, there is nothing to take
/// out. Part-way (a kill inside `git apply`), or under an edit made since, nothing is touched and the
/// refusal names both work trees, as saved before the take-back and now.
fn put_back(repo: &Repo, left: &TakeBack) -> Result<()> {
    let undo = repo.git_bytes(&[
        "diff",
        "--binary",
        "--no-ext-diff",
        &left.head,
        &left.recorded,
        "--",
    ])?;
    if undo.is_empty() {
        return Ok(());
    }
    let apply = |extra: &[&str]| {
        let mut args = vec!["apply", "--whitespace=nowarn"];
        args.extend_from_slice(extra);
        args.push("-");
        repo.git_with(&args, &[], Some(&undo)).map(drop)
    };
    if apply(&["--check", "--reverse"]).is_ok() {
        return apply(&["--reverse"]);
    }
    if apply(&["--check"]).is_ok() {
        return Ok(());
    }
    let now = crate::features::snapshot::work_tree(repo)?;
    Err(hinted(
        format!(
            "a `repair` killed while taking back commits left the work tree part-way: as it was before, it \
             is saved as tree {}; as it is now, as tree {now}",
            left.work_tree
        ),
        format!(
            "put each path back as you want it (`git restore --source={} -- <path>`), then delete {} and \
             run `git cutile-perf repair` again",
            left.work_tree,
            TakeBack::path(repo)?.display()
        ),
    ))
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
