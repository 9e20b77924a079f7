//! Workers started ahead of their rounds: as the step begins, while nothing measures, and let go to
//! make their GPU contexts once the candidate's first worker is ready; and what the next round may
//! still wait for them.

use std::time::Duration;

use anyhow::Result;

use super::{Pair, Rounds};
use crate::system::workers::Side;

/// Starts the workers of round 2, and of the rounds after it where the settings ask
/// ([`super::Settings::rounds_ahead_of_correctness`]), on both sides of every pair that measures, as
/// the step begins: they import and collect while nothing measures, beside the candidate's first
/// start-up and correctness, rather than beside round 1's measurements. Each stands by until
/// [`let_go_once_the_candidate_is_ready`] (or its round) lets it go; held, as any worker started ahead,
/// while the other side measures. One that no round needs ends with the step
/// (`timings.started_unused`).
pub fn stand_by_from_correctness(sides: &mut Rounds) {
    let rounds = sides.settings().rounds_ahead_of_correctness();
    if rounds == 0 {
        return;
    }
    for pair in sides.pairs.iter_mut().filter(|pair| pair.measures_in(None)) {
        pair.candidate.stand_by(rounds, false);
        pair.baseline.stand_by(rounds, false);
    }
}

/// Where workers were started ahead as the step began and the settings let them go at once: waits until
/// the first candidate worker is ready, then lets them all make their GPU contexts and start their
/// profilers, beside correctness. Not earlier: on an H100, eight workers making theirs at once slowed the
/// candidate's own by 1-3 s, the start-up that correctness waits for.
pub fn let_go_once_the_candidate_is_ready(sides: &mut Rounds) -> Result<()> {
    let settings = sides.settings();
    if settings.rounds_ahead_of_correctness() == 0 || !settings.stand_by_at_once {
        return Ok(());
    }
    sides.first().candidate.ready()?;
    for pair in sides.pairs.iter_mut() {
        pair.candidate.let_go_ahead();
        pair.baseline.let_go_ahead();
    }
    Ok(())
}

/// What the next round may wait for its new workers: none where every side's next worker stands
/// ready; else the longest start-up of the workers that served so far.
pub(super) fn unready_start_up(pairs: &[Pair]) -> Option<Duration> {
    let sides = || (pairs.iter()).flat_map(|pair| [&pair.candidate, &pair.baseline]);
    if sides().all(Side::next_is_ready) {
        return None;
    }
    let longest = sides()
        .flat_map(|side| side.start_ups())
        .map(|start_up| start_up.seconds)
        .fold(0.0, f64::max);
    Some(Duration::from_secs_f64(longest))
}
