//! `push [REMOTE]`: the checked-out session branch, the notes (the remote's merged into ours first) and
//! the session refs, in one atomic push.

use anyhow::Result;
use serde::Serialize;

use super::notes::merge_notes;
use super::{
    INCOMING, NOTES, RefStatus, RefUpdate, TravelOptions, is_ancestor, record_refspecs, refs_under,
    render_updates, resolve_remote,
};
use crate::record::history;
use crate::record::session::BRANCH_PREFIX;
use crate::rules::hint::hinted;
use crate::system::git::{NotesLock, Repo};
use crate::system::ui::{Render, Ui};

/// What `push --json` prints.
#[derive(Debug, Serialize)]
pub struct PushReport {
    pub remote: String,
    pub branch: String,
    pub updates: Vec<RefUpdate>,
}

/// `push [REMOTE]`: the checked-out session branch, the notes and the session refs, in one atomic push.
pub fn push(repo: &Repo, options: &TravelOptions) -> Result<PushReport> {
    let TravelOptions { remote, force } = options;
    let Some(branch) = history::session_branch(repo)? else {
        return Err(hinted(
            "not on a cutile-perf session branch",
            format!("check out the {BRANCH_PREFIX}* branch to push"),
        ));
    };
    let remote = resolve_remote(repo, remote.as_deref())?;
    // the notes pushed are the ones merged: no other command of this repository writes them meanwhile
    let lock = NotesLock::take(repo)?;
    merge_remote_notes(&lock, repo, &remote, *force)?;
    let head = format!("refs/heads/{branch}:refs/heads/{branch}");
    // a diverged branch is refused always; the notes, merged above, fast-forward the remote's
    let [notes, session_refs] = record_refspecs();
    let pushed = repo.git(&[
        "push",
        "--atomic",
        "--porcelain",
        &remote,
        &head,
        &notes,
        &session_refs,
    ]);
    let lines = match pushed {
        Ok(lines) => lines,
        Err(err) => return Err(hinted(format!("{err:#}"), rejected(repo, &remote, &branch))),
    };
    Ok(PushReport {
        remote,
        branch,
        updates: pushed_updates(&lines),
    })
}

/// What to do about a refused push: the branch, when the remote's has commits ours lacks; else the
/// record refs, which moved on the remote since they were merged.
fn rejected(repo: &Repo, remote: &str, branch: &str) -> String {
    let listed = repo
        .git(&["ls-remote", remote, &format!("refs/heads/{branch}")])
        .unwrap_or_default();
    let theirs = listed.split('\t').next().unwrap_or_default().trim();
    if !theirs.is_empty() && !is_ancestor(repo, theirs, "HEAD") {
        return format!(
            "the branch was rejected: {remote}'s {branch} has commits yours lacks; `git cutile-perf fetch \
             {remote}` and `git merge --ff-only {remote}/{branch}` bring them (a session branch is one line of \
             iterations: where both sides recorded on it, record yours on a session of your own)"
        );
    }
    format!(
        "the record refs were rejected: {remote}'s notes or session refs hold what yours lack; `git \
         cutile-perf fetch {remote}` brings them (and names what diverged), then push again"
    )
}

/// Before a push: the remote's notes merged into ours where both sides noted different commits, so that
/// ours fast-forward the remote's. Where both noted one commit differently, the push is refused naming
/// it, unless `force` keeps our note there (the remote's other notes are kept all the same).
fn merge_remote_notes(lock: &NotesLock, repo: &Repo, remote: &str, force: bool) -> Result<()> {
    let incoming = format!("+{NOTES}:{INCOMING}{NOTES}");
    let merged = repo
        .git(&["fetch", "--no-tags", "--refmap=", remote, &incoming])
        .and_then(|_| {
            for (staged, theirs) in refs_under(repo, INCOMING)? {
                let name = &staged[INCOMING.len()..];
                let Ok(mine) = repo.git(&["rev-parse", "-q", "--verify", name]) else {
                    continue;
                };
                let mine = mine.trim();
                if is_ancestor(repo, mine, &theirs) || is_ancestor(repo, &theirs, mine) {
                    continue;
                }
                let (status, conflicts) =
                    merge_notes(lock, repo, name, mine, &theirs, force.then_some("ours"))?;
                if status == RefStatus::Refused {
                    return Err(conflict(
                        name,
                        remote,
                        &conflicts,
                        "push --force keeps yours there",
                    ));
                }
            }
            Ok(())
        });
    for (name, _) in refs_under(repo, INCOMING)? {
        repo.git(&["update-ref", "-d", &name])?;
    }
    merged
}

/// Notes both sides wrote on the same commits: what no merge takes both of.
fn conflict(name: &str, remote: &str, commits: &[String], force: &str) -> anyhow::Error {
    hinted(
        format!(
            "{name}: you and {remote} noted the same {} differently: {}",
            if commits.len() == 1 {
                "commit"
            } else {
                "commits"
            },
            commits.join(", ")
        ),
        format!(
            "compare them (`git notes --ref={name} show <commit>`, and {remote}'s after `git cutile-perf \
             fetch`); `{force}`, every other note of both sides kept"
        ),
    )
}

impl Render for PushReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        render_updates(ui, &format!("pushed to {}", self.remote), &self.updates)
    }
}

/// The ref updates of `git push --porcelain`'s output (`FLAG\tFROM:TO\tSUMMARY` lines).
fn pushed_updates(porcelain: &str) -> Vec<RefUpdate> {
    porcelain
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let flag = fields.next()?.chars().next()?;
            let (_, to) = fields.next()?.split_once(':')?;
            let status = match flag {
                '*' => RefStatus::New,
                ' ' => RefStatus::FastForward,
                '=' => RefStatus::UpToDate,
                '+' => RefStatus::Forced,
                '-' => RefStatus::Deleted,
                _ => RefStatus::Refused,
            };
            Some(RefUpdate {
                name: to.to_string(),
                status,
                conflicts: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_porcelain_lines_become_updates() {
        let porcelain = [
            "To /tmp/remote.git",
            "*\trefs/heads/cutile-perf-x:refs/heads/cutile-perf-x\t[new branch]",
            "=\trefs/notes/cutile-perf:refs/notes/cutile-perf\t[up to date]",
            " \trefs/cutile-perf/baseline/x:refs/cutile-perf/baseline/x\tabc..def",
            "+\trefs/notes/cutile-perf-diagnose:refs/notes/cutile-perf-diagnose\tabc...def (forced update)",
            "Done",
        ]
        .join("\n");
        let updates = pushed_updates(&porcelain);
        let got: Vec<(&str, RefStatus)> = updates
            .iter()
            .map(|u| (u.name.as_str(), u.status))
            .collect();
        assert_eq!(
            got,
            [
                ("refs/heads/cutile-perf-x", RefStatus::New),
                ("refs/notes/cutile-perf", RefStatus::UpToDate),
                ("refs/cutile-perf/baseline/x", RefStatus::FastForward),
                ("refs/notes/cutile-perf-diagnose", RefStatus::Forced),
            ]
        );
    }
}
