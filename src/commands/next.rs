//! `next`: the optimizations to try next for the session's kernel class, in the catalog's order.

use anyhow::Result;
use serde::Serialize;

use crate::git::Repo;
use crate::hint::hinted;
use crate::history::{Configs, require_history};
use crate::kernel_class::KernelClass;
use crate::references::{self, Suggestion};
use crate::ui::{Render, Ui};

/// What `next --json` prints.
#[derive(Debug, Serialize)]
pub struct NextReport {
    pub class: KernelClass,
    pub tried: Vec<String>,
    pub next: Vec<Suggestion>,
}

/// What `next` may be told.
#[derive(Debug, Default)]
pub struct NextOptions {
    /// Use this class instead of the session's.
    pub class: Option<KernelClass>,
}

pub fn run(repo: &Repo, options: &NextOptions) -> Result<NextReport> {
    let NextOptions { class } = options;
    let history = require_history(repo, Configs::CurrentBaseline)?;
    let class = match (class, &history.session.class) {
        (Some(class), _) => *class,
        (None, Some(recorded)) => *recorded,
        (None, None) => {
            return Err(hinted(
                "the session has no kernel class",
                "pass --class memory|balanced|compute (start a session with --class or --intensity to \
                 record it)",
            ));
        }
    };
    let tried = history.tried_letters();
    let suggestions = references::next_optimizations(class, &tried);
    Ok(NextReport {
        class,
        tried,
        next: suggestions,
    })
}

impl Render for NextReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let NextReport { class, tried, next } = self;
        let class_word = ui.bold("class").to_string();
        let letters: Vec<String> = next
            .iter()
            .map(|s| ui.bold(&s.letter).to_string())
            .collect();
        let out = ui.out();
        writeln!(
            out,
            "{class_word} {class}-bound; tried: {}",
            if tried.is_empty() {
                "none".to_string()
            } else {
                tried.join(", ")
            }
        )?;
        for (s, letter) in next.iter().zip(&letters) {
            writeln!(out, "  {letter}  {} — {}", s.title, s.why)?;
        }
        if let Some(first) = next.first() {
            writeln!(
                out,
                "next: read `git cutile-perf refs playbook {}`, apply it, then `git cutile-perf step --opt {} \"...\"`",
                first.letter, first.letter
            )?;
        }
        Ok(())
    }
}
