//! The reverted letters a session may try once more, as variants kept to the shapes that gained.

use serde::Serialize;

use super::History;
use crate::record::changes::{self, Changes, ConfigOutcome};
use crate::record::session::{Iteration, Session};
use crate::rules::decision::{Correctness, Status};

/// The least a config must have moved to count for a variant when its measured noise is smaller:
/// between steps a GPU's clocks move a config about this much.
pub const VARIANT_FLOOR_PCT: f64 = 0.5;

/// A reverted letter offered once more: its change sped some configs up and slowed others beyond
/// their noise, so the same optimization kept to the shapes that gained may be kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    pub letter: String,
    /// The reverted iteration it varies.
    pub iteration: u32,
    /// The configs (test ids) it sped up, and those it slowed, beyond their noise.
    pub faster: Vec<String>,
    pub slower: Vec<String>,
}

impl Variant {
    /// `variant of G: iteration 1 sped up X and slowed Y; try it on the shapes that gained`
    pub fn sentence(&self) -> String {
        let slowed = match self.slower.as_slice() {
            [] => String::new(),
            slower => format!(" and slowed {}", slower.join(", ")),
        };
        format!(
            "variant of {}: iteration {} sped up {}{slowed}; try it on the shapes that gained (`step --opt {}` \
             again)",
            self.letter,
            self.iteration,
            self.faster.join(", "),
            self.letter
        )
    }
}

impl History {
    /// The letters tried once, reverted for a slower config while another gained, and neither tried
    /// again nor skipped since: each may be tried once more as a variant (the rule: [`variant`]).
    /// Each iteration's configs moved as the step measured them: its paired estimate where
    /// [`History::estimates`] holds one (the changes its verdict judged), else its trailers' configs
    /// against the kept iteration's before it, which needs every iteration's configs
    /// ([`Configs::All`]); without them none is found.
    pub fn variants(&self) -> Vec<Variant> {
        let iterations: Vec<Iteration> = self.iterations().cloned().collect();
        let changes = changes::of_session(&iterations, &self.estimates);
        let same = |a: &str, b: &str| a.trim().eq_ignore_ascii_case(b.trim());
        iterations
            .iter()
            .zip(&changes)
            .filter_map(|(it, changes)| {
                let letter = it.playbook_letter()?;
                let tries = self
                    .iterations()
                    .filter(|o| o.playbook_letter().is_some_and(|l| same(l, letter)))
                    .count();
                let skipped = self.skipped.iter().any(|s| same(&s.letter, letter));
                if tries != 1 || skipped {
                    return None;
                }
                variant(it, changes, &self.session)
            })
            .collect()
    }
}

/// The variant a lettered iteration leaves: only a revert that passed correctness (one measured, so
/// reverted for a slower config) and sped at least one config up by more than its noise, the spread
/// `start` measured for it (at least [`VARIANT_FLOOR_PCT`]), or the gain threshold where none was.
pub fn variant(it: &Iteration, changes: &Changes, session: &Session) -> Option<Variant> {
    let letter = it.playbook_letter()?;
    if it.status != Status::Revert || it.correctness != Correctness::Pass {
        return None;
    }
    let noise = |c: &ConfigOutcome| {
        session
            .spread
            .iter()
            .find(|s| s.pass == c.pass && s.test == c.test)
            .map_or(session.thresholds.gain_pct, |s| {
                s.spread_pct.max(VARIANT_FLOOR_PCT)
            })
    };
    let beyond = |faster: bool| -> Vec<String> {
        changes
            .configs
            .iter()
            .filter(|c| {
                let moved = if faster { -c.change_pct } else { c.change_pct };
                moved > noise(c)
            })
            .map(|c| c.test.clone())
            .collect()
    };
    let faster = beyond(true);
    (!faster.is_empty()).then(|| Variant {
        letter: letter.to_string(),
        iteration: it.number,
        faster,
        slower: beyond(false),
    })
}
