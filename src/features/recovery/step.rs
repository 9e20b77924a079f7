//! Finishing or undoing an interrupted `step`: its commit kept where it landed with its note, else the
//! tool's commits taken back and the tested edit returned to the work tree.

use anyhow::Result;

use super::{noted, saved_edit};
use crate::record::history::{Configs, require_history, write_table};
use crate::record::journal::{Journal, Phase};
use crate::record::session::{Iteration, short};
use crate::rules::hint::hinted;
use crate::rules::trailers::Block;
use crate::system::git::Repo;

/// The tool's own commits from HEAD back to `base` (at most the attempt and the iteration), oldest
/// first; an error if HEAD is not on the journal's branch or `base` is not found within them.
fn commits_since_base(repo: &Repo, journal: &Journal) -> Result<Vec<String>> {
    let branch = repo.branch()?;
    if branch.as_deref() != Some(journal.branch.as_str()) {
        return Err(hinted(
            format!(
                "HEAD is on {}, not on {} where the interrupted command worked{}",
                branch.as_deref().unwrap_or("a detached commit"),
                journal.branch,
                saved_edit(journal)
            ),
            format!(
                "`git checkout {}`, then run `git cutile-perf repair`",
                journal.branch
            ),
        ));
    }
    let mut commits = Vec::new();
    let mut current = repo.head()?;
    while current != journal.base {
        if commits.len() == 2 || !repo.message(&current)?.starts_with("cutile-perf:") {
            return Err(hinted(
                format!(
                    "the branch {} moved past where the interrupted command left it (commit {} is not its \
                     own){}",
                    journal.branch,
                    short(&current),
                    saved_edit(journal)
                ),
                format!(
                    "delete {} (the interrupted command's journal), then run `git cutile-perf repair --json` \
                     again: it takes back every commit after {} that records nothing, the tool's unfinished \
                     ones too, in a commit of its own",
                    repo.git_path("cutile-perf/journal.json")?.display(),
                    short(&journal.base),
                ),
            ));
        }
        commits.push(current.clone());
        current = repo
            .git(&["rev-parse", "--verify", &format!("{current}^")])?
            .trim()
            .to_string();
    }
    commits.reverse();
    Ok(commits)
}

/// Where the edit is after a step that committed nothing was undone.
const AS_LEFT: &str = "your changes are as you left them, in the work tree and the index";

/// Undoes the step: the tool's commits taken back, the edit returned to the work tree; says how.
pub(super) fn undo(repo: &Repo, journal: &Journal) -> Result<String> {
    if journal.phase == Phase::RunningTests {
        return Ok("your changes are as you left them".to_string());
    }
    let commits = commits_since_base(repo, journal)?;
    let Some(edit) = commits.first() else {
        // the index as the user had it: what they staged (a `git rm`, say) stays staged
        match &journal.index {
            Some(index) => repo.git(&["read-tree", index])?,
            None => repo.git(&["reset", "-q"])?,
        };
        return Ok(AS_LEFT.to_string());
    };
    // the work tree as it is now, saved before anything moves: edits made since the step began (the
    // kernel edited after a kill, a file outside the session) are in it, and no reset below touches it
    let saved = crate::features::snapshot::work_tree(repo)?;
    let mut journal = journal.clone();
    journal.work_tree = Some(saved.clone());
    journal.save(repo)?;
    // HEAD and the index only: the work tree stays as the user has it
    repo.git(&["reset", "-q", &journal.base])?;
    let returned = return_the_edit(repo, edit, &journal.base, &saved)?;
    let taken: Vec<&str> = commits.iter().map(|c| short(c)).collect();
    let mut words = format!(
        "commits {} taken back; your changes are in the work tree, unstaged",
        taken.join(" and ")
    );
    let untested: Vec<String> = repo
        .changed_between(edit, &saved)?
        .into_iter()
        .filter(|p| !returned.contains(p))
        .collect();
    if !untested.is_empty() {
        words += &format!(
            " (changed since the step began, kept as you left them: {}; the work tree as it was is saved \
             as tree {saved})",
            untested.join(", ")
        );
    }
    Ok(words)
}

/// Puts the tested edit back into the work tree where the tool's own undo (`git revert`) had returned a
/// path to the base, and only there: a path the user changed since is theirs. Returns those paths.
fn return_the_edit(repo: &Repo, edit: &str, base: &str, saved: &str) -> Result<Vec<String>> {
    let blob = |tree: &str, path: &str| {
        repo.git(&["rev-parse", "-q", "--verify", &format!("{tree}:{path}")])
            .ok()
    };
    let mut returned = Vec::new();
    for path in repo.changed_between(base, edit)? {
        let now = blob(saved, &path);
        if now != blob(edit, &path) && now == blob(base, &path) {
            returned.push(path);
        }
    }
    if !returned.is_empty() {
        let source = format!("--source={edit}");
        let mut restore = vec![
            "--literal-pathspecs",
            "restore",
            &source,
            "--worktree",
            "--",
        ];
        restore.extend(returned.iter().map(String::as_str));
        repo.git(&restore)?;
    }
    Ok(returned)
}

/// The iteration commit, if the interrupted step made it.
pub(super) fn finish(repo: &Repo, journal: &Journal) -> Result<Option<String>> {
    let commits = commits_since_base(repo, journal)?;
    let Some(last) = commits.last() else {
        return Ok(None);
    };
    if Iteration::read(&Block::from_message(&repo.message(last)?))?.is_none()
        || !noted(repo, journal, last)?
    {
        return Ok(None);
    }
    let history = require_history(repo, Configs::CurrentBaseline)?;
    write_table(repo, &history)?;
    Ok(Some(last.clone()))
}
