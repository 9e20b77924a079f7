//! Commits, notes and the remembered baseline: reading them with gix, writing them with the git CLI so
//! that hooks and signing apply. Apart from the repository's opening and its plain `git` calls in
//! `mod.rs` because these are what the record is made of.

use anyhow::{Context, Result};

use super::{Repo, shallow};
use crate::rules::hint::hinted;
use crate::rules::trailers::Block;

impl Repo {
    /// A commit's tree and parents (full ids), read in-process from `id` (a full id).
    pub fn commit_parts(&self, id: &str) -> Result<(String, Vec<String>)> {
        let commit = self.find_commit(id)?;
        let decoded = commit.decode().context("cannot decode a commit")?;
        Ok((
            decoded.tree().to_string(),
            decoded.parents().map(|p| p.to_string()).collect(),
        ))
    }

    /// The commits from HEAD back along first parents, newest first, each as its id and message. Each
    /// commit is decoded once; the walk is lazy, so a reader that stops early reads no further.
    pub fn first_parent_commits(
        &self,
    ) -> Result<impl Iterator<Item = Result<(String, String)>> + '_> {
        let mut next = Some(
            self.repo
                .head_id()
                .context("the branch has no commit")?
                .detach(),
        );
        Ok(std::iter::from_fn(move || {
            let id = next.take()?;
            let mut read = || -> Result<(String, String)> {
                let commit = (self.repo.find_commit(id))
                    .map_err(|err| self.missing_commit(err.into(), &id.to_string()))?;
                let decoded = commit.decode().context("cannot decode a commit")?;
                next = decoded.parents().next();
                Ok((
                    id.to_string(),
                    String::from_utf8_lossy(decoded.message).into_owned(),
                ))
            };
            Some(read())
        }))
    }

    /// The commit `branch`'s baseline ref names, if the ref exists.
    pub fn remembered_baseline(&self, branch: &str) -> Result<Option<String>> {
        let Some(mut reference) = self
            .repo
            .try_find_reference(&baseline_ref(branch))
            .context("cannot read the session's baseline ref")?
        else {
            return Ok(None);
        };
        Ok(reference.peel_to_id().ok().map(|id| id.to_string()))
    }

    /// Gives each baseline ref whose branch no longer holds its commit (renamed by `git branch -m`,
    /// which renames no other ref, perhaps with a new branch of the old name since) to the one branch
    /// named `<branch_prefix>...` whose history holds that commit and that has no baseline ref of its
    /// own; a ref two such branches could claim stays as it is.
    pub fn follow_renamed_sessions(&self, branch_prefix: &str) -> Result<()> {
        let prefix = baseline_ref("");
        let listed = self.git(&["for-each-ref", "--format=%(refname) %(objectname)", &prefix])?;
        for (name, id) in listed.lines().filter_map(|line| line.split_once(' ')) {
            let branch = &name[prefix.len()..];
            let holds = (self.git(&[
                "merge-base",
                "--is-ancestor",
                id,
                &format!("refs/heads/{branch}"),
            ]))
            .is_ok();
            // a branch of a clone's remote, not checked out here, is not renamed
            let tracked = self.git(&["for-each-ref", &format!("refs/remotes/*/{branch}")])?;
            if holds || !tracked.is_empty() {
                continue;
            }
            let containing = self.git(&[
                "for-each-ref",
                "--contains",
                id,
                "--format=%(refname:short)",
                &format!("refs/heads/{branch_prefix}*"),
            ])?;
            let claimants: Vec<&str> = containing
                .lines()
                .filter(|branch| self.remembered_baseline(branch).is_ok_and(|r| r.is_none()))
                .collect();
            if let [branch] = claimants[..] {
                self.git(&["update-ref", &baseline_ref(branch), id, ""])?;
                self.git(&["update-ref", "-d", name, id])?;
            }
        }
        Ok(())
    }

    /// Points `branch`'s baseline ref at `commit` unless it does already.
    pub fn remember_baseline(&self, branch: &str, commit: &str) -> Result<()> {
        let name = baseline_ref(branch);
        let current = self
            .repo
            .try_find_reference(&name)
            .ok()
            .flatten()
            .and_then(|mut r| r.peel_to_id().ok())
            .map(|id| id.to_string());
        if current.as_deref() != Some(commit) {
            self.git(&["update-ref", &name, commit])?;
        }
        Ok(())
    }

    /// Commits what is staged with `message` (given on stdin: argv has a size limit); git's hooks run.
    /// The message is read back: a commit whose tool trailers did not survive (a `commit-msg` hook or
    /// config rewrote them) is an error naming the likely culprit, and the caller's recovery undoes it.
    /// `env` reaches git's hooks (`hook::message::commit` passes the commit's nonce in it).
    pub fn commit(
        &self,
        message: &str,
        allow_empty: bool,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Result<String> {
        let mut args = vec!["commit", "-q", "--no-edit", "--cleanup=verbatim", "-F", "-"];
        if allow_empty {
            args.push("--allow-empty");
        }
        // with the user's key the record is signed: forging it then takes the key, not just plumbing
        if self.signs() {
            args.push("-S");
        }
        self.git_with(&args, env, Some(message.as_bytes()))?;
        let id = self.head()?;
        let written = self.message(&id)?;
        if Block::from_message(&written) != Block::from_message(message) {
            return Err(hinted(
                format!(
                    "commit {} does not carry the trailers the tool wrote: {} rewrote its message",
                    &id[..id.len().min(12)],
                    self.message_rewriters()
                ),
                "let that hook keep the Cutile-Perf-* lines as they are (appending its own trailers is fine)",
            ));
        }
        Ok(id)
    }

    /// Whether the user has a signing key configured (`user.signingkey`, for `gpg.format` openpgp, ssh
    /// or x509), with which the tool signs its commits.
    pub fn signs(&self) -> bool {
        self.repo
            .config_snapshot()
            .string("user.signingkey")
            .is_some_and(|key| !key.is_empty())
    }

    /// The note `notes_ref` holds for `commit` (a full id), read in-process as git looks one up: the
    /// notes tree names each note by its commit's id, split into fan-out directories (`ab/cdef...`) once
    /// there are many, so a note costs the same whatever the number of notes. `None` without the ref or
    /// a note.
    pub fn note(&self, notes_ref: &str, commit: &str) -> Result<Option<Vec<u8>>> {
        gix::ObjectId::from_hex(commit.as_bytes()).context("bad commit id")?;
        let Some(mut reference) = self
            .repo
            .try_find_reference(notes_ref)
            .with_context(|| format!("cannot read {notes_ref}"))?
        else {
            return Ok(None);
        };
        let notes = reference
            .peel_to_commit()
            .with_context(|| format!("{notes_ref} is not a commit"))?;
        let mut tree = notes
            .tree()
            .with_context(|| format!("cannot read {notes_ref}'s tree"))?;
        let mut rest = commit;
        loop {
            if let Some(entry) = tree.find_entry(rest).filter(|e| e.mode().is_blob()) {
                let blob = self
                    .repo
                    .find_blob(entry.object_id())
                    .context("cannot read a note")?;
                return Ok(Some(blob.data.clone()));
            }
            let Some((dir, tail)) = rest
                .split_at_checked(2)
                .filter(|(_, tail)| !tail.is_empty())
            else {
                return Ok(None);
            };
            let Some(next) = tree
                .find_entry(dir)
                .filter(|e| e.mode().is_tree())
                .map(|e| e.object_id())
            else {
                return Ok(None);
            };
            tree = self
                .repo
                .find_tree(next)
                .context("cannot read the notes' tree")?;
            rest = tail;
        }
    }

    /// The raw message of a commit.
    pub fn message(&self, id: &str) -> Result<String> {
        let commit = self.find_commit(id)?;
        let raw = commit
            .message_raw()
            .context("cannot read a commit message")?;
        Ok(String::from_utf8_lossy(raw).into_owned())
    }

    /// The commit `id` (a full id) names, read in-process.
    fn find_commit(&self, id: &str) -> Result<gix::Commit<'_>> {
        let oid = gix::ObjectId::from_hex(id.as_bytes()).context("bad commit id")?;
        (self.repo.find_commit(oid)).map_err(|err| self.missing_commit(err.into(), id))
    }

    /// Whether this is a shallow clone: its history stops where `git clone --depth` cut it.
    pub fn is_shallow(&self) -> bool {
        self.repo.is_shallow().unwrap_or(false)
    }

    /// A commit git cannot read: in a shallow clone, the history that was cut, said so with the way out.
    fn missing_commit(&self, err: anyhow::Error, id: &str) -> anyhow::Error {
        if !self.is_shallow() {
            return err.context("cannot read a commit");
        }
        shallow(&format!(
            "its history stops before commit {id}, which the session's record reaches"
        ))
    }

    /// The hooks that may rewrite a commit message, as present in this repository, in words.
    fn message_rewriters(&self) -> String {
        let found: Vec<String> = ["prepare-commit-msg", "commit-msg"]
            .iter()
            .filter_map(|name| self.git_path(&format!("hooks/{name}")).ok())
            .filter(|path| path.is_file())
            .map(|path| path.display().to_string())
            .collect();
        match found.is_empty() {
            true => "git (a hook in core.hooksPath, or commit.cleanup/template config)".to_string(),
            false => format!("the hook {}", found.join(" or ")),
        }
    }
}

/// Where the tool remembers a session branch's baseline commit, so that the hook can read the session
/// without walking the history.
pub fn baseline_ref(branch: &str) -> String {
    format!("refs/cutile-perf/baseline/{branch}")
}
