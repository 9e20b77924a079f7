//! `refs` and `next`: the embedded reference guides, and what to try next from them.

use anyhow::{Context, Result, bail};
use serde_json::json;

use super::require_history;
use crate::cli::{NextArgs, RefsArgs};
use crate::git::Repo;
use crate::references;
use crate::ui;

pub fn refs(args: &RefsArgs) -> Result<()> {
    let RefsArgs {
        name,
        section,
        output,
    } = args;
    let Some(name) = name else {
        if output.json {
            let guides: Vec<_> = references::all()
                .iter()
                .map(|r| json!({ "name": r.name, "file": r.file, "sections": references::section_titles(r.text) }))
                .collect();
            return ui::print_json(&json!({ "references": guides }));
        }
        for r in references::all() {
            println!("{:<10} references/{}", r.name, r.file);
        }
        println!(
            "\nprint one with `git cutile-perf refs NAME [SECTION]`, e.g. `git cutile-perf refs playbook B`"
        );
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
        return ui::print_json(
            &json!({ "name": guide.name, "file": guide.file, "section": section, "text": text }),
        );
    }
    print!("{text}");
    Ok(())
}

pub fn next(repo: &Repo, args: &NextArgs) -> Result<()> {
    let NextArgs { class, output } = args;
    let history = require_history(repo)?;
    let class = match (class, &history.session.class) {
        (Some(class), _) => *class,
        (None, Some(recorded)) => *recorded,
        (None, None) => bail!(
            "the session has no kernel class\nhint: pass --class memory|balanced|compute (start a session with \
             --class or --intensity to record it)"
        ),
    };
    let tried = history.tried_letters();
    let suggestions = references::next_optimizations(class, &tried);
    if output.json {
        return ui::print_json(&json!({ "class": class, "tried": tried, "next": suggestions }));
    }
    println!(
        "{} {class}-bound; tried: {}",
        ui::bold("class"),
        if tried.is_empty() {
            "none".to_string()
        } else {
            tried.join(", ")
        }
    );
    for s in &suggestions {
        println!("  {}  {} — {}", ui::bold(&s.letter), s.title, s.why);
    }
    if let Some(first) = suggestions.first() {
        println!(
            "next: read `git cutile-perf refs playbook {}`, apply it, then `git cutile-perf step --opt {} \"...\"`",
            first.letter, first.letter
        );
    }
    Ok(())
}
