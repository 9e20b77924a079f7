//! Finishing or undoing what a journal says was in progress. One path serves a failed commit, an
//! interrupt (the verb undoes before exiting 130) and a killed tool (`repair`, or `start` cleaning up
//! its own half-made branch): the user's edit ends up in the work tree, or in a commit the record names.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::audit::{self, Kind};
use crate::evidence::Evidence;
use crate::git::Repo;
use crate::hint::{self, Hinted, hinted};
use crate::history::{Configs, History, require_history, write_table};
use crate::journal::{Journal, Made, Phase, Verb, group_file};
use crate::process::{self, GitInterrupted, Interrupted};
use crate::session::{Iteration, Session, short};
use crate::trailers::Block;
use crate::ui::Progress;
use crate::workers::lasting;

/// What a repair did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    /// The last commit had landed: the record is complete (the table was rewritten).
    Finished,
    /// Taken back to where the command began.
    Undone,
    /// Commits the tool did not make, their change taken back by a commit of the tool's.
    TakenBack,
}

#[derive(Debug, Serialize)]
pub struct Repaired {
    pub action: Action,
    /// What happened, in words.
    pub what: String,
    /// The commit the record now ends with, when finished.
    pub commit: Option<String>,
}

/// Ends a pytest left running by a killed command (unless the journal's writer still runs); returns a
/// line to tell the user, if it ended one.
pub fn end_orphaned_tests(repo: &Repo) -> Result<Option<String>> {
    if Journal::load(repo)?.is_some_and(|j| j.writer_alive()) {
        return Ok(None);
    }
    remove_orphaned_worktrees(repo)?;
    let groups = process::end_recorded_groups(&group_file(repo)?);
    let groups: Vec<String> = groups.iter().map(ToString::to_string).collect();
    Ok(match groups.len() {
        0 => None,
        1 => Some(format!(
            "ended the tests (process group {}) that a killed command left running",
            groups[0]
        )),
        _ => Some(format!(
            "ended the tests (process groups {}) that a killed command left running",
            groups.join(", ")
        )),
    })
}

/// Removes the worktrees of commands that no longer run: `cutile-perf/baseline-<pid>` (see
/// `paired::CodeTree::add`) and the workers' homes `cutile-perf/workers/<side>-<pid>-<n>` that no kept
/// worker's record names; returns how many.
pub fn remove_orphaned_worktrees(repo: &Repo) -> Result<usize> {
    let kept: Vec<std::path::PathBuf> = lasting::all(repo)?
        .into_iter()
        .map(|(_, worker)| worker.home)
        .collect();
    let entries = |dir: &str| -> Result<Vec<std::fs::DirEntry>> {
        let dir = repo.git_path(dir)?;
        Ok(std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .collect())
    };
    let baselines = entries("cutile-perf")?.into_iter().filter_map(|entry| {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix("baseline-")?.parse().ok()?;
        Some((pid, entry.path(), entry.path()))
    });
    // a home is named `<side>-<pid>-<n>`
    let homes = entries(lasting::WORKERS_DIR)?
        .into_iter()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.rsplit('-').nth(1)?.parse().ok()?;
            Some((pid, entry.path(), entry.path().join("tree")))
        });
    let mut removed = 0;
    for (pid, dir, worktree) in baselines.chain(homes) {
        // an edit in it (an editor following a traceback there) stays: `step` names it
        if crate::journal::pid_alive(pid)
            || kept.contains(&dir)
            || !dir.is_dir()
            || !crate::paired::edits_in(repo, &worktree).is_empty()
        {
            continue;
        }
        let _ = repo.git(&["worktree", "remove", "--force", &worktree.to_string_lossy()]);
        let _ = std::fs::remove_dir_all(&dir);
        removed += 1;
    }
    if removed > 0 {
        repo.git(&["worktree", "prune"])?;
    }
    Ok(removed)
}

/// For `step` and `status`: a line saying an iteration was left unfinished, if one was, with what to
/// do about it.
pub fn unfinished(repo: &Repo) -> Result<Option<Hinted>> {
    Ok(Journal::load(repo)?.map(|journal| {
        if journal.writer_alive() {
            Hinted {
                message: format!(
                    "a `git cutile-perf` command (pid {}) is running on {}",
                    journal.pid, journal.branch
                ),
                hint: None,
            }
        } else {
            Hinted::new(
                journal.describe(),
                "run `git cutile-perf repair` to finish or undo it (your edit is kept)",
            )
        }
    }))
}

/// Refuses to begin while a journal is left (`step`), after ending orphaned tests.
pub fn refuse_unfinished(repo: &Repo, progress: &Progress) -> Result<()> {
    if let Some(line) = end_orphaned_tests(repo)? {
        progress.line(&line);
    }
    match unfinished(repo)? {
        Some(unfinished) => Err(unfinished.into()),
        None => Ok(()),
    }
}

/// Ends a command's pipeline: on success the journal goes; on failure the repository is put back as the
/// command found it, and the error says where the user's edit is.
pub fn settle<T>(repo: &Repo, journal: &Journal, result: Result<T>) -> Result<T> {
    let err = match result {
        Ok(value) => {
            Journal::remove(repo)?;
            return Ok(value);
        }
        Err(err) => err,
    };
    match process::restoring(|| undo(repo, journal)) {
        Ok(words) => {
            Journal::remove(repo)?;
            if err.is::<Interrupted>() {
                Err(err)
            } else if err.is::<GitInterrupted>() || process::interrupted() {
                Err(Interrupted(match journal.verb {
                    Verb::Start => "nothing was created; you are back where you started",
                    Verb::Step => "nothing was recorded; your changes are in the work tree",
                })
                .into())
            } else {
                Err(Hinted {
                    message: format!("{err:#}\nnothing was recorded: {words}"),
                    hint: hint::of(&err).map(str::to_string),
                }
                .into())
            }
        }
        Err(undo_err) => Err(hinted(
            format!(
                "{err:#}\nthe tool could not put the repository back: {undo_err:#}{}",
                saved_edit(journal)
            ),
            "run `git cutile-perf repair`",
        )),
    }
}

/// Where the tested change can be found whatever the work tree holds.
fn saved_edit(journal: &Journal) -> String {
    journal
        .edit_tree
        .as_deref()
        .map_or(String::new(), crate::snapshot::saved_as)
}

/// Finishes the command if its last commit landed, else undoes it (`repair`).
pub fn repair(repo: &Repo, journal: &Journal) -> Result<Repaired> {
    remove_stale_index_lock(repo, journal)?;
    let finished = match journal.verb {
        Verb::Step => finish_step(repo, journal)?,
        Verb::Start => finish_start(repo, journal)?,
    };
    let repaired = match finished {
        Some(commit) => Repaired {
            action: Action::Finished,
            what: format!(
                "the interrupted `{}` had committed {}; the table is rewritten",
                verb(journal),
                short(&commit)
            ),
            commit: Some(commit),
        },
        None => Repaired {
            action: Action::Undone,
            what: undo(repo, journal)?,
            commit: None,
        },
    };
    Journal::remove(repo)?;
    Ok(repaired)
}

fn verb(journal: &Journal) -> &'static str {
    match journal.verb {
        Verb::Start => "start",
        Verb::Step => "step",
    }
}

/// A killed git leaves `index.lock` behind; the journal's writer is gone, so the lock is its.
fn remove_stale_index_lock(repo: &Repo, journal: &Journal) -> Result<()> {
    if journal.writer_alive() {
        return Err(hinted(
            format!("{} is still running (pid {})", verb(journal), journal.pid),
            "wait for it, or stop it first",
        ));
    }
    let lock = repo.git_path("index.lock")?;
    if lock.exists() {
        std::fs::remove_file(&lock).with_context(|| format!("cannot remove {}", lock.display()))?;
    }
    Ok(())
}

/// Puts the repository back as before the command, and says how.
pub fn undo(repo: &Repo, journal: &Journal) -> Result<String> {
    match journal.verb {
        Verb::Step => undo_step(repo, journal),
        Verb::Start => undo_start(repo, journal),
    }
}

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

fn undo_step(repo: &Repo, journal: &Journal) -> Result<String> {
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
    let saved = crate::snapshot::work_tree(repo)?;
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
fn finish_step(repo: &Repo, journal: &Journal) -> Result<Option<String>> {
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

/// Whether the command's last commit carries its evidence note, attaching the one its journal kept
/// where a kill came between the two; `false` where neither has it: the commit is then undone, since
/// an iteration without its note would stand in the record for ever unchecked.
fn noted(repo: &Repo, journal: &Journal, commit: &str) -> Result<bool> {
    if crate::evidence::note(repo, commit)?.is_some() {
        return Ok(true);
    }
    match &journal.note {
        Some(blob) => Evidence::attach_stashed(repo, blob, commit).map(|()| true),
        None => Ok(false),
    }
}

fn undo_start(repo: &Repo, journal: &Journal) -> Result<String> {
    if !repo.branch_exists(&journal.branch)? {
        return Ok("nothing was created".to_string());
    }
    let tip = repo
        .git(&["rev-parse", "--verify", &journal.branch])?
        .trim()
        .to_string();
    let own = tip == journal.base
        || (repo
            .git(&["rev-parse", "--verify", &format!("{tip}^")])?
            .trim()
            == journal.base
            && is_own_empty_commit(repo, &tip, &journal.base)?);
    if !own {
        return Err(hinted(
            format!(
                "branch {} has commits the interrupted `start` did not make",
                journal.branch
            ),
            "look at it; delete it yourself if it is not needed",
        ));
    }
    if repo.branch()?.as_deref() == Some(journal.branch.as_str()) {
        let original = journal.original.as_deref().unwrap_or(&journal.base);
        repo.git(&["checkout", "-q", original])?;
    }
    repo.git(&["branch", "-q", "-D", &journal.branch])?;
    Ok(format!(
        "the half-made branch {} is deleted{}",
        journal.branch,
        take_back_made(repo, &journal.made)?
    ))
}

/// Removes what `start` made beside its branch, newest first; says what, for the user.
fn take_back_made(repo: &Repo, made: &[Made]) -> Result<String> {
    let mut removed = Vec::new();
    for thing in made.iter().rev() {
        match thing {
            Made::Hooks => {
                crate::hook::uninstall(repo)?;
                removed.push("its hooks");
            }
            Made::ExcludeLine => {
                repo.unexclude(&format!("/{}/", crate::guard::SANDBOX))?;
                removed.push("its line in .git/info/exclude");
            }
            Made::Sandbox => {
                let sandbox = crate::history::sandbox(repo);
                if sandbox.exists() {
                    std::fs::remove_dir_all(&sandbox)
                        .with_context(|| format!("cannot remove {}", sandbox.display()))?;
                }
                removed.push("sandbox/ with the baseline's logs");
            }
        }
    }
    Ok(match removed.is_empty() {
        true => String::new(),
        false => format!(", as are {}", removed.join(", ")),
    })
}

/// The baseline commit `start` made, judged by what a hook cannot have changed: the tool's subject and
/// no change to the tree (a hook that appended to the message broke its trailers, not its origin).
fn is_own_empty_commit(repo: &Repo, commit: &str, base: &str) -> Result<bool> {
    let tree = |rev: &str| repo.git(&["rev-parse", &format!("{rev}^{{tree}}")]);
    Ok(repo.message(commit)?.starts_with("cutile-perf:") && tree(commit)? == tree(base)?)
}

fn is_baseline(repo: &Repo, commit: &str) -> Result<bool> {
    Ok(Session::read(&Block::from_message(&repo.message(commit)?))?.is_some())
}

/// The baseline commit, if the interrupted start made it: remembered for the hook, table written.
fn finish_start(repo: &Repo, journal: &Journal) -> Result<Option<String>> {
    if !repo.branch_exists(&journal.branch)?
        || repo.branch()?.as_deref() != Some(journal.branch.as_str())
    {
        return Ok(None);
    }
    let head = repo.head()?;
    if head == journal.base || !is_baseline(repo, &head)? || !noted(repo, journal, &head)? {
        return Ok(None);
    }
    repo.remember_baseline(&journal.branch, &head)?;
    let history = require_history(repo, Configs::CurrentBaseline)?;
    write_table(repo, &history)?;
    Ok(Some(head))
}
// Commits on a session branch that the tool did not make (a commit past the hooks, `--no-verify`) are
// taken back by one commit of the tool's own, whose tree is the record's last: the run of commits that
// record nothing then changes nothing, so the record holds again, and their change stays in the history
// for whoever wants it back as a step of its own. The branch is never rewritten, and the work tree loses
// their change too, so the next step cannot carry it beside the next edit unmeasured.

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
    if !undo.is_empty() {
        repo.git_with(&["apply", "--whitespace=nowarn", "-"], &[], Some(&undo))
            .map_err(|err| {
                hinted(
                    format!("{err:#}"),
                    "your edit in the work tree overlaps what those commits changed: move it aside (`git diff > \
                     edit.patch`, then `git restore <path>`), run `git cutile-perf repair --json` again, then \
                     `git apply edit.patch`",
                )
            })?;
    }
    let lines: Vec<String> = findings.iter().map(ToString::to_string).collect();
    let message = format!(
        "cutile-perf: take back {}: commits the tool did not make\n\n{}\n",
        short(&head),
        lines.join("\n")
    );
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
