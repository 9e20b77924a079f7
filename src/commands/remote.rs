//! `push`, `fetch` and `setup-remote`: the session's record travels with its branch. The evidence is in
//! notes (`refs/notes/cutile-perf`, and the diagnose cache beside it) and the session refs
//! (`refs/cutile-perf/...`), which a plain `git push` or `git fetch` leaves behind; without them a
//! reviewer's or CI's clone cannot `verify` a pushed session.
//!
//! Notes are one history per ref, but each note sits on its own commit: two clones that recorded
//! sessions of their own have diverged notes refs that never disagree on a commit. Those are merged
//! (`git notes merge`), before a push and on a fetch, so that both sides' evidence is kept. Only a
//! commit both sides noted differently (a true conflict) refuses, naming the commit, unless `--force`
//! says whose note it keeps there: `fetch --force` the remote's, `push --force` ours; every other note of
//! either side stays (and the ref's earlier value is in its reflog).

use anyhow::Result;
use serde::Serialize;

use crate::errors::Reported;
use crate::git::Repo;
use crate::hint::{Hinted, hinted};
use crate::history;
use crate::session::BRANCH_PREFIX;
use crate::ui::{Render, Ui};

/// The evidence notes and the diagnose cache, as one refspec pattern.
const NOTES: &str = "refs/notes/cutile-perf*";
/// The session refs (each session branch's remembered baseline).
const SESSION_REFS: &str = "refs/cutile-perf/*";
/// Where `fetch` downloads the remote's record refs before deciding, ref by ref, whether ours may move.
const INCOMING: &str = "refs/cutile-perf-incoming/";

/// Our record refs, as `git for-each-ref` patterns.
const RECORD_REFS: [&str; 2] = [NOTES, "refs/cutile-perf/"];

/// The record's refspecs, each mapping a ref to the same name on the other side.
fn record_refspecs() -> [String; 2] {
    [NOTES, SESSION_REFS].map(|pattern| format!("{pattern}:{pattern}"))
}

/// What happened to one ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefStatus {
    New,
    FastForward,
    UpToDate,
    /// Ours has everything the other side has, and more: kept.
    Ahead,
    /// Diverged notes on different commits: both sides' kept in a merge.
    Merged,
    /// Diverged: a notes ref merged with the notes both sides wrote on one commit taken from the
    /// remote (`fetch --force`); another record ref replaced.
    Forced,
    /// Diverged, and left as it was.
    Refused,
    Deleted,
}

#[derive(Debug, Serialize)]
pub struct RefUpdate {
    #[serde(rename = "ref")]
    pub name: String,
    pub status: RefStatus,
    /// The commits both sides noted differently: left as ours (refused), or given the remote's note
    /// (forced).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
}

/// What `push --json` prints.
#[derive(Debug, Serialize)]
pub struct PushReport {
    pub remote: String,
    pub branch: String,
    pub updates: Vec<RefUpdate>,
}

/// What `fetch --json` prints.
#[derive(Debug, Serialize)]
pub struct FetchReport {
    pub remote: String,
    /// The remote's session branches, as remote-tracking branches (check one out to `verify` it).
    pub branches: Vec<String>,
    pub updates: Vec<RefUpdate>,
}

/// What `setup-remote --json` prints.
#[derive(Debug, Serialize)]
pub struct SetupReport {
    pub remote: String,
    /// `remote.<name>.push` and `.fetch` values added by this run (none when they were there already).
    pub added: Vec<ConfigValue>,
}

#[derive(Debug, Serialize)]
pub struct ConfigValue {
    pub key: String,
    pub value: String,
}

/// Where the record travels: the remote (default: the branch's upstream remote, else origin), and
/// whether diverged notes are taken from this side (push) or the remote's (fetch).
#[derive(Debug, Default)]
pub struct TravelOptions {
    pub remote: Option<String>,
    pub force: bool,
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
    merge_remote_notes(repo, &remote, *force)?;
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
fn merge_remote_notes(repo: &Repo, remote: &str, force: bool) -> Result<()> {
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
                    merge_notes(repo, name, mine, &theirs, force.then_some("ours"))?;
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
            "{name}: you and {remote} noted the same commit(s) differently: {}",
            commits.join(", ")
        ),
        format!(
            "compare them (`git notes --ref={name} show <commit>`, and {remote}'s after `git cutile-perf \
             fetch`); `{force}`, every other note of both sides kept"
        ),
    )
}

/// Merges the notes commit `theirs` into our notes ref `name` (at `mine`): notes on different commits
/// are all kept. Where both sides noted a commit differently, `prefer` (`ours` or `theirs`) says whose
/// note stays; without it nothing is merged (`Refused`). Returns the commits that conflicted.
fn merge_notes(
    repo: &Repo,
    name: &str,
    mine: &str,
    theirs: &str,
    prefer: Option<&str>,
) -> Result<(RefStatus, Vec<String>)> {
    let ours = notes_in(repo, mine)?;
    let conflicts: Vec<String> = notes_in(repo, theirs)?
        .into_iter()
        .filter(|(object, blob)| ours.get(object).is_some_and(|mine| mine != blob))
        .map(|(object, _)| object)
        .collect();
    let (strategy, status) = match (conflicts.is_empty(), prefer) {
        // nothing noted differently: any strategy takes every note
        (true, _) => ("ours", RefStatus::Merged),
        (false, Some(side)) => (side, RefStatus::Forced),
        (false, None) => return Ok((RefStatus::Refused, conflicts)),
    };
    // `git notes merge` takes a notes ref: the remote's notes, named for the merge only
    const MERGING: &str = "refs/notes/merging-cutile-perf";
    repo.git(&["update-ref", MERGING, theirs])?;
    let merged = repo.git(&[
        "notes",
        &format!("--ref={name}"),
        "merge",
        "-q",
        "-s",
        strategy,
        MERGING,
    ]);
    repo.git(&["update-ref", "-d", MERGING])?;
    merged?;
    Ok((status, conflicts))
}

/// The notes a notes commit holds: each annotated object with its note's blob (fanout paths joined).
fn notes_in(repo: &Repo, notes: &str) -> Result<std::collections::BTreeMap<String, String>> {
    let listed = repo.git(&["ls-tree", "-r", notes])?;
    Ok(listed
        .lines()
        .filter_map(|line| {
            let (meta, path) = line.split_once('\t')?;
            let blob = meta.split(' ').nth(2)?;
            Some((path.replace('/', ""), blob.to_string()))
        })
        .collect())
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

/// `fetch [REMOTE]`: the remote's session branches (as remote-tracking branches), its notes and its
/// session refs. A record ref of ours moves only forward; a diverged one is refused unless `--force`
/// ([`FetchReport::verdict`]).
pub fn fetch(repo: &Repo, options: &TravelOptions) -> Result<FetchReport> {
    let TravelOptions { remote, force } = options;
    let remote = resolve_remote(repo, remote.as_deref())?;
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
    let updates = fetched.and_then(|_| take_incoming(repo, *force));
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
                    "{} left as it was: you and {} noted the same commit(s) differently: {}",
                    refused.join(", "),
                    self.remote,
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
/// (or `force` says so).
fn take_incoming(repo: &Repo, force: bool) -> Result<Vec<RefUpdate>> {
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
        let mut conflicts = Vec::new();
        let status = match ours.get(&name) {
            None => RefStatus::New,
            Some(mine) if *mine == theirs => RefStatus::UpToDate,
            Some(mine) if is_ancestor(repo, mine, &theirs) => RefStatus::FastForward,
            Some(mine) if is_ancestor(repo, &theirs, mine) => RefStatus::Ahead,
            // notes are merged: both sides' kept, the remote's taken only where both noted a commit
            Some(mine) if name.starts_with("refs/notes/") => {
                let merged = merge_notes(repo, &name, mine, &theirs, force.then_some("theirs"))?;
                conflicts = merged.1;
                merged.0
            }
            Some(_) if force => RefStatus::Forced,
            Some(_) => RefStatus::Refused,
        };
        let replaced = status == RefStatus::Forced && !name.starts_with("refs/notes/");
        if matches!(status, RefStatus::New | RefStatus::FastForward) || replaced {
            repo.git(&["update-ref", &name, &theirs])?;
        }
        updates.push(RefUpdate {
            name,
            status,
            conflicts,
        });
    }
    Ok(updates)
}

/// `setup-remote [REMOTE]`: adds the record's refspecs to `remote.<name>.push` and `.fetch`, once.
pub fn setup_remote(repo: &Repo, remote: Option<&str>) -> Result<SetupReport> {
    let remote = resolve_remote(repo, remote)?;
    let mut added = Vec::new();
    for direction in ["push", "fetch"] {
        let key = format!("remote.{remote}.{direction}");
        let existing = config_values(repo, &key)?;
        let mut wanted = record_refspecs().to_vec();
        // with any push refspec configured, a plain `git push` pushes only those: keep it pushing the
        // current branch, as it did before
        if direction == "push" && existing.is_empty() {
            wanted.insert(0, "HEAD".to_string());
        }
        for value in wanted.into_iter().filter(|v| !existing.contains(v)) {
            repo.git(&["config", "--add", &key, &value])?;
            added.push(ConfigValue {
                key: key.clone(),
                value,
            });
        }
    }
    Ok(SetupReport { remote, added })
}

impl Render for SetupReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if self.added.is_empty() {
            writeln!(out, "{} carries the session's record already", self.remote)?;
            return Ok(());
        }
        for ConfigValue { key, value } in &self.added {
            writeln!(out, "added {key} = {value}")?;
        }
        writeln!(
            out,
            "plain `git push {0}` and `git fetch {0}` now carry the evidence notes and session refs",
            self.remote
        )?;
        Ok(())
    }
}

/// `remote`, or the current branch's upstream remote, or `origin`; it must be a configured remote
/// (fetch keeps remote-tracking branches under its name).
fn resolve_remote(repo: &Repo, remote: Option<&str>) -> Result<String> {
    let upstream = || -> Result<Option<String>> {
        let Some(branch) = repo.branch()? else {
            return Ok(None);
        };
        Ok(config_values(repo, &format!("branch.{branch}.remote"))?.pop())
    };
    let name = match remote {
        Some(name) => name.to_string(),
        None => upstream()?.unwrap_or_else(|| "origin".to_string()),
    };
    let known = repo.git(&["remote"])?;
    if !known.lines().any(|line| line == name) {
        return Err(hinted(
            format!("no remote named {name:?}"),
            format!(
                "add it with `git remote add {name} URL`, or name one of: {}",
                known.lines().collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    Ok(name)
}

/// Every value of a multi-valued git config key (none when it is unset).
fn config_values(repo: &Repo, key: &str) -> Result<Vec<String>> {
    // exit 1 means unset; an invalid key or file is 2 or more and stays an error
    // (git prints nothing for an unset key, so its error ends with an empty stderr)
    match repo.git(&["config", "--get-all", key]) {
        Ok(values) => Ok(values.lines().map(str::to_string).collect()),
        Err(err) if err.to_string().ends_with("failed: ") => Ok(Vec::new()),
        Err(err) => Err(err),
    }
}

/// The refs `git for-each-ref` matches with `pattern` (a glob whose `*` also matches `/`, or a
/// prefix ending in `/`), each with the object it points at.
fn refs_under(repo: &Repo, pattern: &str) -> Result<Vec<(String, String)>> {
    let listed = repo.git(&["for-each-ref", "--format=%(refname) %(objectname)", pattern])?;
    Ok(listed
        .lines()
        .filter_map(|line| line.split_once(' '))
        .map(|(name, id)| (name.to_string(), id.to_string()))
        .collect())
}

/// Whether commit `older` is `newer` or one of its ancestors (unrelated histories are not).
fn is_ancestor(repo: &Repo, older: &str, newer: &str) -> bool {
    repo.git(&["merge-base", older, newer])
        .is_ok_and(|base| base.trim() == older)
}

/// `title` and a line per ref update.
fn render_updates(ui: &mut Ui, title: &str, updates: &[RefUpdate]) -> Result<()> {
    let out = ui.out();
    writeln!(out, "{title}")?;
    for RefUpdate {
        name,
        status,
        conflicts,
    } in updates
    {
        let word = serde_json::to_value(status)?;
        writeln!(out, "  {:<14} {name}", word.as_str().unwrap_or_default())?;
        if !conflicts.is_empty() {
            let what = match status {
                RefStatus::Forced => "the remote's note taken on",
                _ => "noted differently on each side:",
            };
            writeln!(out, "    {what} {}", conflicts.join(", "))?;
        }
    }
    Ok(())
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
