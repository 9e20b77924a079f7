//! Repositories and arguments the guard cannot see through, refused before anything is created: each
//! would otherwise let a change escape the allowed-path rule, write outside the repository, or record a
//! measurement of something other than the kernel.

use anyhow::{Context, Result};

use crate::rules::guard::SANDBOX;
use crate::rules::hint::hinted;
use crate::system::git::Repo;

/// Before `start` creates anything; `untracked_ok` for the session perf file, which is never
/// committed.
pub fn check_start(repo: &Repo, test: &str, untracked_ok: bool) -> Result<()> {
    if repo.is_unborn()? {
        return Err(hinted(
            "the repository has no commit yet",
            "commit the TileGym checkout first (on the branch you start from, never on a cutile-perf session \
             branch); a session branches from a commit",
        ));
    }
    if repo.is_shallow() {
        return Err(crate::system::git::shallow(
            "a session reads the branch's history back to its baseline, and the hook reads it at every \
             commit",
        ));
    }
    refuse_linked_test(repo, test)?;
    if !untracked_ok && !tracked(repo, test)? {
        return Err(hinted(
            format!(
                "the test file {test} is not tracked by git, so the session could not prove what it ran"
            ),
            format!(
                "commit it first on the branch you start from, never on a cutile-perf session branch (`git \
                 add {test} && git commit`)"
            ),
        ));
    }
    let tracked_sandbox = repo.git(&["ls-files", "-z", "--", SANDBOX])?;
    if !tracked_sandbox.is_empty() {
        return Err(hinted(
            format!(
                "{SANDBOX}/ holds tracked files ({}), but it is the tool's scratch directory",
                tracked_sandbox.trim_end_matches('\0').replace('\0', ", ")
            ),
            format!(
                "move them out of {SANDBOX}/ and commit that first, on the branch you start from, never on a \
                 cutile-perf session branch"
            ),
        ));
    }
    if let Some(shared) = crate::features::hook::shared_dir(repo)? {
        return Err(crate::features::hook::refuse_shared(&shared));
    }
    let hooks = repo.git_path("hooks")?;
    if let Ok(inside) = hooks
        .canonicalize()
        .unwrap_or(hooks.clone())
        .strip_prefix(&repo.root)
        && !inside.as_os_str().is_empty()
        && tracked(repo, &inside.to_string_lossy())?
    {
        return Err(hinted(
            format!(
                "core.hooksPath points at {}, a tracked directory: installing the hook there would change \
                 tracked files",
                inside.display()
            ),
            "point core.hooksPath at an untracked directory, or unset it",
        ));
    }
    check_tree(repo)
}

/// A session started on another session's branch would carry that session's commits and kernel
/// change inside its own, and `verify` could not tell them apart: a session starts from the branch
/// the checked-out one started from.
pub fn refuse_session_branch(repo: &Repo) -> Result<()> {
    let Some(branch) = crate::record::history::session_branch(repo)? else {
        return Ok(());
    };
    let base = crate::record::history::remembered_baseline(repo, &branch)?
        .and_then(|baseline| {
            repo.git(&["rev-parse", "--short", &format!("{baseline}^")])
                .ok()
        })
        .map(|base| base.trim().to_string());
    let from = match base
        .as_deref()
        .map(|base| (base, starting_branch(repo, base)))
    {
        Some((_, Some(name))) => format!(" (`git checkout {name}`)"),
        Some((base, None)) => format!(" (`git checkout {base}` is the commit it started from)"),
        None => String::new(),
    };
    Err(hinted(
        format!(
            "{branch} is a cutile-perf session branch: a session started here would carry its commits"
        ),
        format!("check out the branch it started from{from}, then start again"),
    ))
}

/// The one branch, not a session's, that points at `commit`.
fn starting_branch(repo: &Repo, commit: &str) -> Option<String> {
    let names = repo
        .git(&[
            "for-each-ref",
            "--format=%(refname:short)",
            "--points-at",
            commit,
            "refs/heads/",
        ])
        .ok()?;
    let mut names = names
        .lines()
        .filter(|name| !name.starts_with(crate::record::session::BRANCH_PREFIX));
    let name = names.next()?.to_string();
    names.next().is_none().then_some(name)
}

/// Before every `step` runs anything: what could have changed since `start` checked it (the session's
/// `test` file among it: one a session began with, before links were refused, is refused now).
pub fn check_step(repo: &Repo, allowed: &[String], test: &str) -> Result<()> {
    refuse_linked_test(repo, test)?;
    for path in allowed {
        let full = repo.root.join(path);
        if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(hinted(
                format!(
                    "the allowed path {path} is a symbolic link: what it points at is outside the record"
                ),
                format!("put the file itself back (`git restore {path}`) and edit it in place"),
            ));
        }
    }
    check_tree(repo)
}

/// The test file must be the file itself: through a symbolic link, what the tests run could change
/// where git does not see it (a file outside the repository), and a side's worktree would run what the
/// link points at rather than its own commit's test.
fn refuse_linked_test(repo: &Repo, test: &str) -> Result<()> {
    let path = repo.root.join(test);
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    let target =
        std::fs::read_link(&path).map_or_else(|_| "?".to_string(), |p| p.display().to_string());
    Err(hinted(
        format!(
            "the test file {test} is a symbolic link (to {target}): what the tests run could change \
             where git does not see it"
        ),
        format!(
            "put a copy of the file itself in its place and commit it (`cp --remove-destination \
             \"$(readlink -f {test})\" {test} && git commit {test}` on the branch you start from, never on a cutile-perf \
             session branch), then start a session from that commit"
        ),
    ))
}

/// A path given to `--allow`: one file, not a directory (a directory never matches the rule's paths).
pub fn check_allowed(repo: &Repo, path: &str) -> Result<()> {
    if path.is_empty() || path == "." || repo.root.join(path).is_dir() {
        return Err(hinted(
            format!(
                "--allow {} is a directory; the allowed paths are files",
                if path.is_empty() { "." } else { path }
            ),
            "name each file iterations may change",
        ));
    }
    if path
        .split('/')
        .any(|part| part.eq_ignore_ascii_case(".git"))
    {
        return Err(hinted(
            format!("--allow {path} is inside git's own directory, which no commit holds"),
            "name files of the work tree that iterations may change",
        ));
    }
    Ok(())
}

/// The scratch directory must be a real directory inside the repository (or absent).
fn check_tree(repo: &Repo) -> Result<()> {
    let sandbox = repo.root.join(SANDBOX);
    if std::fs::symlink_metadata(&sandbox).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(hinted(
            format!(
                "{SANDBOX} is a symbolic link ({}): the tool would write through it",
                std::fs::read_link(&sandbox)
                    .map_or_else(|_| "?".to_string(), |p| p.display().to_string())
            ),
            format!("remove the link; the tool makes {SANDBOX}/ itself"),
        ));
    }
    Ok(())
}

/// Whether git tracks `path` (a file, or a directory with tracked files).
fn tracked(repo: &Repo, path: &str) -> Result<bool> {
    Ok(!repo
        .git(&["--literal-pathspecs", "ls-files", "-z", "--", path])?
        .is_empty())
}

/// The blob id of the untracked session perf file at `path`, as `start` records it.
pub fn perf_file_hash(repo: &Repo, path: &str) -> Result<String> {
    Ok(repo
        .git(&["hash-object", "--no-filters", "--", path])?
        .trim()
        .to_string())
}

/// The ref that keeps the bytes of the session perf file with blob id `id`: the file is never
/// committed, and `push` and `fetch` carry `refs/cutile-perf/*`, so another clone can verify and
/// continue the session.
pub fn perf_file_ref(id: &str) -> String {
    format!("refs/cutile-perf/perf-file/{id}")
}

/// Keeps the session perf file's bytes in the record ([`perf_file_ref`]) while the file is the one the
/// baseline measured; a session started before the record kept them gains the ref here.
pub fn keep_perf_file(repo: &Repo, session: &crate::record::session::Session) -> Result<()> {
    let Some(recorded) = &session.perf_file else {
        return Ok(());
    };
    let name = perf_file_ref(recorded);
    if repo.git(&["rev-parse", "-q", "--verify", &name]).is_ok()
        || !repo.root.join(&session.test).is_file()
    {
        return Ok(());
    }
    let written = repo.git(&["hash-object", "-w", "--no-filters", "--", &session.test])?;
    if written.trim() == recorded {
        repo.git(&["update-ref", &name, recorded])?;
    }
    Ok(())
}

/// Writes the session perf file back from the record where it is missing (a clone, or deleted);
/// `false` when the record does not hold it.
fn restore_perf_file(repo: &Repo, session: &crate::record::session::Session) -> Result<bool> {
    let Some(recorded) = &session.perf_file else {
        return Ok(false);
    };
    let Ok(bytes) = repo.git_bytes(&[
        "cat-file",
        "blob",
        &format!("{}^{{blob}}", perf_file_ref(recorded)),
    ]) else {
        return Ok(false);
    };
    let text = String::from_utf8(bytes).context("the recorded session perf file is not UTF-8")?;
    // as `start --scaffold` writes one: the sandbox excluded, its conftest beside the file
    crate::features::inspect::perf_file::write(repo, &session.test, &text)?;
    Ok(true)
}

/// How the session perf file differs from the one the baseline recorded, if it does: a step on
/// another file would compare its configs with the baseline's under the same names. A missing file the
/// record holds is written back first.
pub fn perf_file_change(
    repo: &Repo,
    session: &crate::record::session::Session,
) -> Result<Option<String>> {
    let Some(recorded) = &session.perf_file else {
        return Ok(None);
    };
    if !repo.root.join(&session.test).is_file() && !restore_perf_file(repo, session)? {
        return Ok(Some(format!(
            "the session perf file {} is gone, and the record does not hold it ({} is missing: where the \
             session started, `git cutile-perf push` sends it; here, `git cutile-perf fetch` brings it)",
            session.test,
            perf_file_ref(recorded)
        )));
    }
    let now = perf_file_hash(repo, &session.test)?;
    if now == *recorded {
        keep_perf_file(repo, session)?;
        return Ok(None);
    }
    Ok(Some(format!(
        "the session perf file {} changed since the baseline (recorded {}, now {})",
        session.test,
        crate::record::session::short(recorded),
        crate::record::session::short(&now)
    )))
}

/// Before a step: the session perf file must be the baseline's.
pub fn check_perf_file(repo: &Repo, session: &crate::record::session::Session) -> Result<()> {
    if let Some(script) = &session.benchmark {
        let kernel = std::path::Path::new(&session.kernel).file_stem();
        let name = kernel
            .map(|stem| stem.to_string_lossy())
            .unwrap_or_default();
        require_committed_benchmark(repo, script, &name)?;
    }
    match perf_file_change(repo, session)? {
        None => Ok(()),
        Some(what) => Err(hinted(
            what,
            format!(
                "move yours aside and `git cutile-perf verify` writes back the one the record holds (`mv {0} \
                 {0}.mine && git cutile-perf verify`); to measure other shapes, start a new session on the \
                 edited file",
                session.test
            ),
        )),
    }
}

/// The standalone benchmark script a session perf file runs must be in HEAD's commit: the baseline's
/// side runs from a commit, where a script only the work tree holds is not.
pub fn require_committed_benchmark(repo: &Repo, script: &str, kernel: &str) -> Result<()> {
    if repo
        .git(&["cat-file", "-e", &format!("HEAD:{script}")])
        .is_ok()
    {
        return Ok(());
    }
    Err(hinted(
        format!(
            "the standalone benchmark {script} that the session perf file runs is not committed: the \
             baseline's side, which runs from a commit, would not find it"
        ),
        format!(
            "commit it on the branch you start sessions from, never on a cutile-perf session branch (`git \
             add -- {script} && git commit`), then start the session there (`git cutile-perf start {kernel}`); a session already started without \
             it cannot be continued"
        ),
    ))
}
