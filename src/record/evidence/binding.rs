//! What an evidence note measured: the commit it was written for, its tree, parents and trailers, so
//! that a note copied onto another commit, or a commit made again over another tree, is told apart.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::rules::trailers::Block;
use crate::system::git::Repo;

/// What an evidence note measured: the commit and what it is made of. A note copied onto another commit,
/// or a commit made again with the same message over another tree, no longer matches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    pub commit: String,
    pub tree: String,
    pub parents: Vec<String>,
    /// The tree of the attempt a reverted or crashed iteration names: the code that was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_tree: Option<String>,
    /// The commit's trailer block.
    pub trailers: String,
}

impl Binding {
    /// `commit` (a full id) as git holds it now (objects read without replacements, in-process: `verify`
    /// reads every commit's). An attempt the trailers name that is not a commit here has no tree.
    pub fn of(repo: &Repo, commit: &str) -> Result<Binding> {
        let (tree, parents) = repo.commit_parts(commit)?;
        let block = Block::from_message(&repo.message(commit)?);
        let attempt_tree = block
            .get("Attempt")?
            .and_then(|attempt| repo.commit_parts(attempt).ok())
            .map(|(tree, _)| tree);
        Ok(Binding {
            commit: commit.to_string(),
            tree,
            parents,
            attempt_tree,
            trailers: block.render(),
        })
    }

    /// What differs between the commit the note was written for (`self`) and the one it sits on, in words.
    pub fn differences(&self, now: &Binding) -> Vec<String> {
        let short = crate::record::session::short;
        let mut found = Vec::new();
        if self.commit != now.commit {
            found.push(format!("it was written for commit {}", short(&self.commit)));
        }
        if self.tree != now.tree {
            found.push(format!(
                "it measured tree {}, the commit holds {}",
                short(&self.tree),
                short(&now.tree)
            ));
        }
        if self.parents != now.parents {
            found.push(format!(
                "it was written on {} {}, the commit has {}",
                if self.parents.len() == 1 {
                    "parent"
                } else {
                    "parents"
                },
                self.parents
                    .iter()
                    .map(|p| short(p))
                    .collect::<Vec<_>>()
                    .join(" "),
                now.parents
                    .iter()
                    .map(|p| short(p))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        if self.attempt_tree != now.attempt_tree {
            found.push("the attempt it measured is not the one the commit names".to_string());
        }
        if self.trailers != now.trailers {
            found.push("its trailers are not the commit's".to_string());
        }
        found
    }
}
