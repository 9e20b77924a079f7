//! `refs`: the embedded reference guides, whole or one section.

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::rules::references;
use crate::system::ui::{Render, Ui};

/// One guide, as `refs --json` lists it.
#[derive(Debug, Serialize)]
pub struct Guide {
    pub name: &'static str,
    pub file: &'static str,
    pub sections: Vec<&'static str>,
}

/// What `refs --json` prints without a name.
#[derive(Debug, Serialize)]
pub struct GuideList {
    pub references: Vec<Guide>,
}

/// What `refs NAME [SECTION] --json` prints.
#[derive(Debug, Serialize)]
pub struct GuideText {
    pub name: &'static str,
    pub file: &'static str,
    pub section: Option<String>,
    pub text: &'static str,
}

/// What `refs` prints: the list of guides, or one guide's text.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum RefsReport {
    List(GuideList),
    Text(GuideText),
}

/// Which guide, and which section of it; neither lists the guides.
#[derive(Debug, Default)]
pub struct RefsOptions {
    pub name: Option<String>,
    pub section: Option<String>,
}

pub fn run(options: &RefsOptions) -> Result<RefsReport> {
    let RefsOptions { name, section } = options;
    let Some(name) = name else {
        let references = references::all()
            .iter()
            .map(|r| Guide {
                name: r.name,
                file: r.file,
                sections: references::section_titles(r.text),
            })
            .collect();
        return Ok(RefsReport::List(GuideList { references }));
    };
    let guide = references::find(name).with_context(|| {
        let names: Vec<_> = references::all().iter().map(|r| r.name).collect();
        format!(
            "no reference named {name:?}; the guides are: {}",
            names.join(", ")
        )
    })?;
    let text = match section {
        None => guide.text,
        Some(key) => match references::section(guide.text, key) {
            Some(text) => text,
            None => bail!(
                "{} has no section {key:?}; its sections are:\n  {}",
                guide.name,
                references::section_titles(guide.text).join("\n  ")
            ),
        },
    };
    Ok(RefsReport::Text(GuideText {
        name: guide.name,
        file: guide.file,
        section: section.clone(),
        text,
    }))
}

impl Render for RefsReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        match self {
            RefsReport::List(list) => {
                for r in &list.references {
                    writeln!(out, "{:<10} references/{}", r.name, r.file)?;
                }
                writeln!(
                    out,
                    "\nprint one with `git cutile-perf refs NAME [SECTION]`, e.g. `git cutile-perf refs playbook B`"
                )?;
            }
            RefsReport::Text(guide) => write!(out, "{}", guide.text)?,
        }
        Ok(())
    }
}
