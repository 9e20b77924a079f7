//! What a `step` tested, taken before the tests run and checked before anything is committed: a change
//! made during the run (the kernel edited again, HEAD moved, the branch switched, commits added) would
//! otherwise be recorded under a measurement of something else.

use anyhow::Result;

use crate::rules::hint::hinted;
use crate::system::git::Repo;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tested {
    pub head: String,
    pub branch: Option<String>,
    /// Every changed path, as `Repo::all_changes` lists them.
    pub changed: Vec<String>,
    /// HEAD's tree with the changed paths' content from the work tree: the change as a tree object.
    pub tree: String,
}

impl Tested {
    pub fn take(repo: &Repo) -> Result<Tested> {
        let changed = repo.all_changes()?;
        Ok(Tested {
            head: repo.head()?,
            branch: repo.branch()?,
            tree: change_tree(repo, &changed)?,
            changed,
        })
    }

    /// Refuses when the repository is not what was tested; nothing is recorded then.
    pub fn check(&self, repo: &Repo) -> Result<()> {
        let now = Tested::take(repo)?;
        let what = if now.branch != self.branch {
            format!(
                "the branch was switched ({} -> {})",
                self.branch.as_deref().unwrap_or("detached"),
                now.branch.as_deref().unwrap_or("detached")
            )
        } else if now.head != self.head {
            format!(
                "HEAD moved ({} -> {}): commits appeared or were reset",
                &self.head[..12],
                &now.head[..12]
            )
        } else if now != *self {
            let mut paths: Vec<&str> = now
                .changed
                .iter()
                .chain(&self.changed)
                .map(String::as_str)
                .collect();
            paths.sort_unstable();
            paths.dedup();
            format!(
                "files changed (edited, added or removed) among {}",
                paths.join(", ")
            )
        } else {
            return Ok(());
        };
        Err(hinted(
            format!(
                "the repository changed while the tests ran: {what}\nnothing was recorded: the measurement is \
                 of something else; your changes are as they are now{}",
                saved_as(&self.tree)
            ),
            "leave the repository alone while `step` runs (a test that checks files out or writes them \
             belongs elsewhere), then run step again",
        ))
    }
}

/// Where a tested change saved as `tree` can be found whatever the work tree holds, as a sentence.
pub fn saved_as(tree: &str) -> String {
    format!(
        "\nthe tested change is saved as tree {tree}: `git restore --source={tree} -- .` brings it back"
    )
}

/// The whole work tree (HEAD's tree with every tracked and untracked change, ignored files aside) as a
/// tree object: what a reset may then not lose.
pub fn work_tree(repo: &Repo) -> Result<String> {
    change_tree(repo, &repo.all_changes()?)
}

/// `changed` over HEAD's tree, through a private index so the user's index is untouched.
fn change_tree(repo: &Repo, changed: &[String]) -> Result<String> {
    let index = repo.git_path("cutile-perf/tested-index")?;
    if let Some(dir) = index.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let env = [("GIT_INDEX_FILE", index.as_os_str())];
    let result = (|| {
        repo.git_with(&["read-tree", "HEAD"], &env, None)?;
        if !changed.is_empty() {
            let mut add = vec!["--literal-pathspecs", "add", "-A", "--"];
            add.extend(changed.iter().map(String::as_str));
            repo.git_with(&add, &env, None)?;
        }
        let tree = repo.git_with(&["write-tree"], &env, None)?;
        Ok(String::from_utf8_lossy(&tree).trim().to_string())
    })();
    let _ = std::fs::remove_file(&index);
    result
}
