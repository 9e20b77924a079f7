//! `skill`: prints the Agent Skill, or installs it where agents look for skills.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

use crate::agent::skill::{self, FILES, Installed, NAME, Target};
use crate::cli::SkillArgs;
use crate::git::Repo;
use crate::ui;

/// What `skill --json` prints: the text with `--print`, the folders written with `--install`.
#[derive(Debug, Serialize)]
pub struct SkillReport {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill_md: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub installed: Vec<Installed>,
}

/// `repo` is the checkout around the current directory, if any: `--project` needs it, and a folder
/// installed inside it is kept out of git.
pub fn run(repo: Option<&Repo>, args: &SkillArgs, out: &mut impl Write) -> Result<()> {
    let SkillArgs {
        print: _,
        install,
        dir,
        user,
        project: _,
        output,
    } = args;
    let (_, skill_md) = FILES[0];
    if !install {
        if output.json {
            let report = SkillReport {
                name: NAME,
                skill_md: Some(skill_md),
                installed: Vec::new(),
            };
            return ui::write_json(out, &report);
        }
        write!(out, "{skill_md}")?;
        return Ok(());
    }
    let target = match (dir, user) {
        (Some(dir), _) => Target::Dir(dir.clone()),
        (None, true) => Target::User,
        (None, false) => Target::Project,
    };
    let installed = skill::install(&skill::skills_dirs(&target, repo)?, repo)?;
    if output.json {
        let report = SkillReport {
            name: NAME,
            skill_md: None,
            installed,
        };
        return ui::write_json(out, &report);
    }
    for copy in &installed {
        let excluded = copy.excluded.as_deref().map_or(String::new(), |p| {
            format!(" (kept out of git: {p} in .git/info/exclude)")
        });
        writeln!(out, "installed {}{excluded}", copy.dir.display())?;
    }
    Ok(())
}
