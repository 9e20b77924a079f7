//! `next`: the optimizations to try next for the session's kernel class, in the catalog's order; and
//! `next --skip LETTER --why TEXT`, which records that a letter cannot apply to this kernel.

use anyhow::Result;
use serde::Serialize;

use crate::features::hook;
use crate::features::recovery;
use crate::record::history::{Configs, History, Variant, require_history};
use crate::record::journal::Lock;
use crate::record::session::Skip;
use crate::rules::hint::hinted;
use crate::rules::kernel_class::KernelClass;
use crate::rules::references::{self, Suggestion};
use crate::rules::trailers::{Block, one_line, render_message};
use crate::system::git::Repo;
use crate::system::ui::{Progress, Render, Ui};
use crate::verbs::agent::next_action::{NextAction, next_action, of_session};

/// What `next --json` prints.
#[derive(Debug, Serialize)]
pub struct NextReport {
    pub class: KernelClass,
    pub tried: Vec<String>,
    /// Letters recorded as not applying (`next --skip`), with why.
    pub skipped: Vec<Skip>,
    /// The commit that recorded this call's `--skip`.
    pub skip_commit: Option<String>,
    pub next: Vec<Suggestion>,
    /// Reverted letters that may be tried once more, on the shapes that gained.
    pub variants: Vec<Variant>,
    /// What the loop expects now, as every report that changes the session and `status` say it: its
    /// `letters` are `next`'s letters under the session's own class.
    pub next_action: NextAction,
}

/// What `next` may be told.
#[derive(Debug, Default)]
pub struct NextOptions {
    /// Use this class instead of the session's.
    pub class: Option<KernelClass>,
    /// Record this letter as not applying, for this reason, before listing.
    pub skip: Option<(String, String)>,
}

pub fn run(ui: &mut Ui, repo: &Repo, options: &NextOptions) -> Result<NextReport> {
    let NextOptions { class, skip } = options;
    let _lock = match skip {
        Some(_) => Some(Lock::take(repo, "next")?),
        None => None,
    };
    let mut history = require_history(repo, Configs::All)?;
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
    let skip_commit = match skip {
        Some((letter, why)) => Some(record_skip(repo, &mut history, letter, why, ui.sink())?),
        None => None,
    };
    let tried = history.tried_letters();
    let mut foreign = Vec::new();
    let next_action = next_action(of_session(repo, &mut history, &mut foreign)?);
    Ok(NextReport {
        next_action,
        class,
        next: references::next_optimizations(class, &history.settled_letters()),
        variants: history.variants(),
        tried,
        skipped: history.skipped,
        skip_commit,
    })
}

/// Commits the skip as an empty commit carrying `Cutile-Perf-Skip` and `-Skip-Why`, which the history
/// reads and `verify` holds to changing nothing; adds it to `history` and returns its id.
fn record_skip(
    repo: &Repo,
    history: &mut History,
    letter: &str,
    why: &str,
    progress: &Progress,
) -> Result<String> {
    recovery::refuse_unfinished(repo, progress)?;
    let letter = references::playbook_letter(letter, "--skip")?;
    let why = one_line(why);
    if why.is_empty() {
        return Err(hinted(
            "--why is empty: the skip would not say why the letter cannot apply",
            "say it in a few words, e.g. `--why \"the timed kernel already uses ct.load/ct.store\"`",
        ));
    }
    if history.tried_letters().contains(&letter) {
        return Err(hinted(
            format!("{letter} is tried already: an iteration records it"),
            "a tried letter is no longer offered; skip only a letter not yet tried",
        ));
    }
    if let Some(skipped) = history.skipped.iter().find(|s| s.letter == letter) {
        return Err(hinted(
            format!("{letter} is skipped already: {}", skipped.why),
            "a skip is recorded once and stays; `step --opt` still takes the letter if it applies after all",
        ));
    }
    // the commit takes the index as it is: what the user staged would ride along unmeasured
    let staged = repo.git(&["diff", "--cached", "--name-only"])?;
    if !staged.trim().is_empty() {
        return Err(hinted(
            format!(
                "changes are staged ({}): a skip's commit must change nothing",
                staged.split_whitespace().collect::<Vec<_>>().join(", ")
            ),
            "unstage them (`git restore --staged <path>`; the work tree keeps them) and skip again",
        ));
    }
    let skip = Skip { letter, why };
    let mut block = Block::default();
    skip.write(&mut block);
    let subject = format!("cutile-perf: skip {}: {}", skip.letter, skip.why);
    let commit = hook::message::commit(repo, &render_message(&subject, None, &block), true)?;
    history.skipped.push(skip);
    Ok(commit)
}

impl Render for NextReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let NextReport {
            class,
            tried,
            skipped,
            skip_commit,
            next,
            variants,
            next_action,
        } = self;
        let class_word = ui.bold("class").to_string();
        let letters: Vec<String> = next
            .iter()
            .map(|s| ui.bold(&s.letter).to_string())
            .collect();
        let out = ui.out();
        if let (Some(commit), Some(skip)) = (skip_commit, skipped.last()) {
            writeln!(
                out,
                "skipped {} (commit {}): {}",
                skip.letter,
                crate::record::session::short(commit),
                skip.why
            )?;
        }
        writeln!(
            out,
            "{class_word} {class}-bound; tried: {}",
            if tried.is_empty() {
                "none".to_string()
            } else {
                tried.join(", ")
            }
        )?;
        for skip in skipped {
            writeln!(out, "  skipped {}: {}", skip.letter, skip.why)?;
        }
        for (s, letter) in next.iter().zip(&letters) {
            writeln!(out, "  {letter}  {} — {}", s.title, s.why)?;
        }
        for variant in variants {
            writeln!(out, "  {}", variant.sentence())?;
        }
        writeln!(out, "next: {}", next_action.line)?;
        Ok(())
    }
}
