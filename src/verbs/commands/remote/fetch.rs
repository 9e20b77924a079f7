//! `fetch [REMOTE]`: the remote's session branches, notes and session refs; a record ref of ours moves
//! only forward, a diverged notes ref is merged, anything else diverged is refused unless `--force`.

use anyhow::Result;
use serde::Serialize;

use super::notes::{merge_notes, rewritten_notes};
use super::{
    INCOMING, NOTES, RECORD_REFS, RefStatus, RefUpdate, SESSION_REFS, TravelOptions, is_ancestor,
    refs_under, render_updates, resolve_remote,
};
use crate::record::session::BRANCH_PREFIX;
use crate::rules::hint::{Hinted, hinted};
use crate::system::git::{NotesLock, Repo};
use crate::system::ui::{Render, Ui};
use crate::verbs::errors::Reported;

/// What `fetch --json` prints.
#[derive(Debug, Serialize)]
pub struct FetchReport {
    pub remote: String,
    /// The remote's session branches, as remote-tracking branches (check one out to `verify` it).
    pub branches: Vec<String>,
    pub updates: Vec<RefUpdate>,
}

/// `fetch [REMOTE]`: the remote's session branches (as remote-tracking branches), its notes and its
/// session refs. A record ref of ours moves only forward; a diverged one is refused unless `--force`
/// ([`FetchReport::verdict`]).
pub fn fetch(repo: &Repo, options: &TravelOptions) -> Result<FetchReport> {
    let TravelOptions { remote, force } = options;
    let remote = resolve_remote(repo, remote.as_deref())?;
    // the staging refs and the notes refs are shared by every worktree of the repository
    let lock = NotesLock::take(repo)?;
    let branches = format!("+refs/heads/{BRANCH_PREFIX}*:refs/remotes/{remote}/{BRANCH_PREFIX}*");
    let incoming = [NOTES, SESSION_REFS].map(|pattern| format!("+{pattern}:{INCOMING}{pattern}"));
    // an empty refmap keeps git from also updating refs through `remote.<name>.fetch` (which
    // setup-remote points at our notes): only the staging refs below change here
    let fetched = repo.git(&[
        "fetch",
        "--no-tags",
        "--refmap=",
        &remote,
        &branches,
        &incoming[0],
        &incoming[1],
    ]);
    let updates = fetched.and_then(|_| take_incoming(&lock, repo, *force));
    // the downloads are only a staging area, gone whatever happened
    for (name, _) in refs_under(repo, INCOMING)? {
        repo.git(&["update-ref", "-d", &name])?;
    }
    Ok(FetchReport {
        branches: refs_under(repo, &format!("refs/remotes/{remote}/{BRANCH_PREFIX}*"))?
            .into_iter()
            .map(|(name, _)| name.trim_start_matches("refs/remotes/").to_string())
            .collect(),
        remote,
        updates: updates?,
    })
}

impl Render for FetchReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        render_updates(ui, &format!("fetched from {}", self.remote), &self.updates)
    }
}

impl FetchReport {
    /// Fails when a record ref of ours diverged from the remote's and was left as it was.
    pub fn verdict(&self) -> Result<()> {
        let refused: Vec<&str> = (self.updates.iter())
            .filter(|u| u.status == RefStatus::Refused)
            .map(|u| u.name.as_str())
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        let conflicts: Vec<String> = (self.updates.iter())
            .flat_map(|u| u.conflicts.iter().cloned())
            .collect();
        if !conflicts.is_empty() {
            return Err(Reported(Hinted::new(
                format!(
                    "{} left as it was: you and {} noted the same {} differently: {}",
                    refused.join(", "),
                    self.remote,
                    if conflicts.len() == 1 { "commit" } else { "commits" },
                    conflicts.join(", ")
                ),
                format!(
                    "compare them (`git notes --ref=<ref> show <commit>`); `fetch --force` takes {}'s note \
                     on those commits and keeps every other note of yours (the ref's earlier value stays in \
                     its reflog: `git reflog {}`)",
                    self.remote, refused[0]
                ),
            ))
            .into());
        }
        Err(Reported(Hinted::new(
            format!(
                "{} diverged from {}'s and was left as it was",
                refused.join(", "),
                self.remote
            ),
            format!(
                "both sides recorded a session ref the other lacks; `fetch --force` takes {}'s (yours stays \
                 in the reflog: `git reflog {}`)",
                self.remote, refused[0]
            ),
        ))
        .into())
    }
}

/// Moves each of our record refs to what was downloaded under [`INCOMING`], where that loses nothing
/// (or `force` says so). A notes ref is compared note by note on every path, a fast-forward included:
/// a note of ours the remote rewrote or removed is refused and named.
fn take_incoming(lock: &NotesLock, repo: &Repo, force: bool) -> Result<Vec<RefUpdate>> {
    let ours: std::collections::BTreeMap<String, String> = RECORD_REFS
        .iter()
        .map(|pattern| refs_under(repo, pattern))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let mut updates = Vec::new();
    for (staged, theirs) in refs_under(repo, INCOMING)? {
        let name = staged[INCOMING.len()..].to_string();
        let notes = name.starts_with("refs/notes/");
        let mine = ours.get(&name).map(String::as_str);
        let (status, conflicts, move_to) = match mine {
            None => (RefStatus::New, Vec::new(), Some(&theirs)),
            Some(mine) if mine == theirs => (RefStatus::UpToDate, Vec::new(), None),
            Some(mine) if is_ancestor(repo, mine, &theirs) => {
                let rewritten = match notes {
                    true => rewritten_notes(repo, mine, &theirs)?,
                    false => Vec::new(),
                };
                match (rewritten.is_empty(), force) {
                    (true, _) => (RefStatus::FastForward, rewritten, Some(&theirs)),
                    (false, true) => (RefStatus::Forced, rewritten, Some(&theirs)),
                    (false, false) => (RefStatus::Refused, rewritten, None),
                }
            }
            Some(mine) if is_ancestor(repo, &theirs, mine) => (RefStatus::Ahead, Vec::new(), None),
            // notes are merged: both sides' kept, the remote's taken only where both noted a commit
            Some(mine) if notes => {
                let prefer = force.then_some("theirs");
                let (status, conflicts) = merge_notes(lock, repo, &name, mine, &theirs, prefer)?;
                (status, conflicts, None)
            }
            Some(_) if force => (RefStatus::Forced, Vec::new(), Some(&theirs)),
            Some(_) => (RefStatus::Refused, Vec::new(), None),
        };
        if let Some(target) = move_to
            && !lock.swap(&name, target, mine)?
        {
            return Err(hinted(
                format!(
                    "{name} changed while fetch ran (a command outside git cutile-perf wrote it)"
                ),
                "nothing of yours was replaced; run `fetch` again",
            ));
        }
        updates.push(RefUpdate {
            name,
            status,
            conflicts,
        });
    }
    Ok(updates)
}
