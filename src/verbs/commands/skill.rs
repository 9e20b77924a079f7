//! `skill`: prints the Agent Skill, or installs it where agents look for skills.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};
use crate::verbs::agent::skill::{self, FILES, Installed, NAME, Target};

/// What `skill --json` prints: the text with `--print`, the folders written with `--install`.
#[derive(Debug, Serialize)]
pub struct SkillReport {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_md: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<Installed>,
}

/// Where the skill goes, if it is installed rather than printed.
#[derive(Debug, Default)]
pub struct SkillOptions {
    pub install: bool,
    /// Install into this folder instead of where agents look.
    pub dir: Option<PathBuf>,
    /// Install into the user's own skills folders.
    pub user: bool,
}

/// `repo` is the checkout around the current directory, if any: `--project` needs it, and a folder
/// installed inside it is kept out of git.
pub fn run(repo: Option<&Repo>, options: &SkillOptions) -> Result<SkillReport> {
    let SkillOptions { install, dir, user } = options;
    let (_, skill_md) = FILES[0];
    if !install {
        return Ok(SkillReport {
            name: NAME,
            skill_md: Some(skill_md),
            installed: Vec::new(),
        });
    }
    let target = match (dir, user) {
        (Some(dir), _) => Target::Dir(dir.clone()),
        (None, true) => Target::User,
        (None, false) => Target::Project,
    };
    Ok(SkillReport {
        name: NAME,
        skill_md: None,
        installed: skill::install(&skill::skills_dirs(&target, repo)?, repo)?,
    })
}

impl Render for SkillReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if let Some(skill_md) = self.skill_md {
            write!(out, "{skill_md}")?;
        }
        for copy in &self.installed {
            let excluded = copy.excluded.as_deref().map_or(String::new(), |p| {
                format!(" (kept out of git: {p} in .git/info/exclude)")
            });
            writeln!(out, "installed {}{excluded}", copy.dir.display())?;
        }
        Ok(())
    }
}
