//! `refs`: the embedded reference guides, whole or one section.

use std::io::Write;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use crate::cli::RefsArgs;
use crate::references;
use crate::ui;

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
pub struct GuideText<'a> {
    pub name: &'static str,
    pub file: &'static str,
    pub section: Option<&'a str>,
    pub text: &'a str,
}

pub fn run(args: &RefsArgs, out: &mut impl Write) -> Result<()> {
    let RefsArgs {
        name,
        section,
        output,
    } = args;
    let Some(name) = name else {
        if output.json {
            let references = references::all()
                .iter()
                .map(|r| Guide {
                    name: r.name,
                    file: r.file,
                    sections: references::section_titles(r.text),
                })
                .collect();
            return ui::write_json(out, &GuideList { references });
        }
        for r in references::all() {
            writeln!(out, "{:<10} references/{}", r.name, r.file)?;
        }
        writeln!(
            out,
            "\nprint one with `git cutile-perf refs NAME [SECTION]`, e.g. `git cutile-perf refs playbook B`"
        )?;
        return Ok(());
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
    if output.json {
        return ui::write_json(
            out,
            &GuideText {
                name: guide.name,
                file: guide.file,
                section: section.as_deref(),
                text,
            },
        );
    }
    write!(out, "{text}")?;
    Ok(())
}
