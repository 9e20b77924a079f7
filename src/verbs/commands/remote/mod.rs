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
//!
//! What the three share is here; each verb in its own file (`push.rs`, `fetch.rs`, `setup.rs`), and the
//! merge of two sides' notes refs that push and fetch both make in `notes.rs`.

use anyhow::Result;
use serde::Serialize;

use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::ui::Ui;

mod fetch;
mod notes;
mod push;
mod setup;

pub use fetch::{FetchReport, fetch};
pub use push::{PushReport, push};
pub use setup::{ConfigValue, SetupReport, setup_remote};

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

/// Where the record travels: the remote (default: the branch's upstream remote, else origin), and
/// whether diverged notes are taken from this side (push) or the remote's (fetch).
#[derive(Debug, Default)]
pub struct TravelOptions {
    pub remote: Option<String>,
    pub force: bool,
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
        let others = match known.lines().collect::<Vec<_>>() {
            none if none.is_empty() => "this repository has no remotes yet".to_string(),
            names => format!("or name one of: {}", names.join(", ")),
        };
        return Err(hinted(
            format!("no remote named {name:?}"),
            format!("add it with `git remote add {name} URL`; {others}"),
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
