//! The Agent Skill that teaches an agent the loop through this tool, in the open Agent Skills format: a
//! folder named like the skill, holding `SKILL.md` (YAML frontmatter `name` and `description`, then the
//! body) and `evals/evals.json` (prompts with the behaviour expected of an agent). The guides are not
//! copied: the body reaches them through `git cutile-perf refs`, so they stay one text.
//!
//! Agents look in a checkout's `.claude/skills/` and `.agents/skills/` (in TileGym, links to the tracked
//! `skills/`) and in the user's own `~/.claude/skills/` and `~/.agents/skills/`. Installed in a checkout,
//! the folder is added to `.git/info/exclude`: the work tree stays clean, so `start` and `step`, which
//! refuse untracked files outside the allowed paths, never see it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::rules::hint::{Hinted, hinted};
use crate::system::git::Repo;

/// The skill's name: its folder's name and the frontmatter's `name`.
pub const NAME: &str = "git-cutile-perf";

/// The skill's files, relative to its folder.
pub const FILES: &[(&str, &str)] = &[
    ("SKILL.md", include_str!("skill/SKILL.md")),
    ("evals/evals.json", include_str!("skill/evals/evals.json")),
];

/// What marks a `SKILL.md` as this tool's, so that reinstalling replaces it and nothing else.
const GENERATOR: &str = "generator: \"git cutile-perf skill\"";

/// Where the skill goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `DIR/<name>/`.
    Dir(PathBuf),
    /// The user's `~/.claude/skills/` and `~/.agents/skills/`.
    User,
    /// The checkout's `.claude/skills/` and `.agents/skills/`.
    Project,
}

/// One installed copy.
#[derive(Debug, Serialize)]
pub struct Installed {
    /// The skill's folder, links resolved.
    pub dir: PathBuf,
    /// The pattern added to `.git/info/exclude`, for a folder inside the checkout.
    pub excluded: Option<String>,
}

/// The skills directories `target` names (before links are resolved).
pub fn skills_dirs(target: &Target, repo: Option<&Repo>) -> Result<Vec<PathBuf>> {
    let agents = |base: &Path| vec![base.join(".claude/skills"), base.join(".agents/skills")];
    Ok(match target {
        Target::Dir(dir) => vec![dir.clone()],
        Target::User => {
            let home = std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .context(Hinted::new(
                    "HOME is not set",
                    "use --dir DIR to name the skills directory",
                ))?;
            agents(Path::new(&home))
        }
        Target::Project => match repo {
            Some(repo) => agents(&repo.root),
            None => {
                return Err(hinted(
                    "--project needs a git checkout, and this directory is in none",
                    "run it inside the checkout, or use --user or --dir DIR",
                ));
            }
        },
    })
}

/// Writes the skill into each of `skills_dirs` (once per real directory: in TileGym both links lead to
/// `skills/`), keeping a folder inside `repo`'s work tree out of git's sight.
pub fn install(skills_dirs: &[PathBuf], repo: Option<&Repo>) -> Result<Vec<Installed>> {
    let mut installed: Vec<Installed> = Vec::new();
    for skills in skills_dirs {
        std::fs::create_dir_all(skills)
            .with_context(|| format!("cannot create {}", skills.display()))?;
        let dir = skills.canonicalize()?.join(NAME);
        if installed.iter().any(|i| i.dir == dir) {
            continue;
        }
        let excluded = match repo {
            Some(repo) => keep_out_of_git(repo, &dir)?,
            None => None,
        };
        write_files(&dir)?;
        installed.push(Installed { dir, excluded });
    }
    Ok(installed)
}

/// Adds `dir` to the checkout's exclude file when it lies in the work tree; refuses a folder git
/// tracks, whose files the install would change.
fn keep_out_of_git(repo: &Repo, dir: &Path) -> Result<Option<String>> {
    let root = repo.root.canonicalize()?;
    let Ok(relative) = dir.strip_prefix(&root) else {
        return Ok(None);
    };
    let relative = relative.to_string_lossy();
    if !repo
        .git(&["ls-files", "--", &format!(":(literal){relative}")])?
        .is_empty()
    {
        return Err(hinted(
            format!(
                "the checkout tracks files in {relative}: installing the skill there would change them"
            ),
            "install it with --user or --dir DIR instead",
        ));
    }
    let pattern = format!("/{relative}/");
    repo.exclude(&pattern)?;
    Ok(Some(pattern))
}

fn write_files(dir: &Path) -> Result<()> {
    let skill_md = dir.join("SKILL.md");
    if let Ok(existing) = std::fs::read_to_string(&skill_md)
        && !existing.contains(GENERATOR)
    {
        return Err(hinted(
            format!(
                "{} exists and is not this tool's skill; it is left as it is",
                skill_md.display()
            ),
            "move it away, or install with --dir DIR elsewhere",
        ));
    }
    for (path, text) in FILES {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skill_md_carries_the_generator_mark_in_its_frontmatter() {
        let (_, skill) = FILES[0];
        let frontmatter = skill
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map(|(front, _)| front)
            .unwrap();
        assert!(frontmatter.contains(GENERATOR));
        assert!(frontmatter.lines().any(|l| l == format!("name: {NAME}")));
    }

    #[test]
    fn a_foreign_skill_md_is_left_alone_and_ours_is_replaced() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(NAME);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: git-cutile-perf\n---\nmine\n",
        )
        .unwrap();
        let err = install(&[temp.path().to_path_buf()], None).unwrap_err();
        assert!(
            format!("{err:#}").contains("is not this tool's skill"),
            "{err:#}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
            "---\nname: git-cutile-perf\n---\nmine\n"
        );
        std::fs::write(dir.join("SKILL.md"), format!("old\n{GENERATOR}\n")).unwrap();
        let installed = install(&[temp.path().to_path_buf()], None).unwrap();
        assert_eq!(installed.len(), 1);
        assert_eq!(
            std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
            FILES[0].1
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("evals/evals.json")).unwrap(),
            FILES[1].1
        );
    }

    #[test]
    fn two_names_for_one_directory_install_once() {
        let temp = tempfile::tempdir().unwrap();
        let real = temp.path().join("skills");
        std::fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(&real, temp.path().join("link")).unwrap();
        let installed = install(&[temp.path().join("link"), real.clone()], None).unwrap();
        assert_eq!(installed.len(), 1);
        assert_eq!(installed[0].dir, real.canonicalize().unwrap().join(NAME));
    }
}
