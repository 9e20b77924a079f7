//! `next`: the optimizations to try next for the session's kernel class, in the catalog's order.

use std::io::Write;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::cli::NextArgs;
use crate::git::Repo;
use crate::history::{Configs, require_history};
use crate::kernel_class::KernelClass;
use crate::references::{self, Suggestion};
use crate::ui;

/// What `next --json` prints.
#[derive(Debug, Serialize)]
pub struct NextReport {
    pub class: KernelClass,
    pub tried: Vec<String>,
    pub next: Vec<Suggestion>,
}

pub fn run(repo: &Repo, args: &NextArgs, out: &mut impl Write) -> Result<()> {
    let NextArgs { class, output } = args;
    let history = require_history(repo, Configs::CurrentBaseline)?;
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
        return ui::write_json(
            out,
            &NextReport {
                class,
                tried,
                next: suggestions,
            },
        );
    }
    writeln!(
        out,
        "{} {class}-bound; tried: {}",
        ui::bold("class"),
        if tried.is_empty() {
            "none".to_string()
        } else {
            tried.join(", ")
        }
    )?;
    for s in &suggestions {
        writeln!(out, "  {}  {} — {}", ui::bold(&s.letter), s.title, s.why)?;
    }
    if let Some(first) = suggestions.first() {
        writeln!(
            out,
            "next: read `git cutile-perf refs playbook {}`, apply it, then `git cutile-perf step --opt {} \"...\"`",
            first.letter, first.letter
        )?;
    }
    Ok(())
}
