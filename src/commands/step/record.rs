//! The record stage: the iteration commit, and for a revert or crash the attempt before it.

use anyhow::{Context, Result};

use crate::decision::Status;
use crate::git::Repo;
use crate::history::History;
use crate::hook;
use crate::journal::{Journal, Phase};
use crate::session::Iteration;
use crate::trailers::{Block, one_line, render_message};

/// What `record` committed: the iteration commit, and the iteration as recorded (its attempt named).
pub struct Recorded {
    pub id: String,
    pub iteration: Iteration,
}

/// Commits the iteration; for a revert or crash, the attempt first, then its undoing with the trailers.
/// Each phase is journaled first; on a failure the caller's `recovery::settle` puts things back.
pub fn record(
    repo: &Repo,
    journal: &mut Journal,
    history: &History,
    mut iteration: Iteration,
    changed: &[String],
    notes: Option<&str>,
) -> Result<Recorded> {
    let kernel_name = std::path::Path::new(&history.session.kernel)
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let kept = iteration.status == Status::Keep;
    journal.enter(
        repo,
        if kept {
            Phase::CommittingIteration
        } else {
            Phase::CommittingAttempt
        },
    )?;
    repo.stage(changed)?;
    if !kept {
        let subject = format!(
            "cutile-perf: attempt {} on {kernel_name}: {}",
            iteration.number, iteration.optimization
        );
        let attempt = hook::message::commit(repo, &format!("{}\n", one_line(&subject)), false)
            .context("could not commit the attempt")?;
        iteration.attempt = Some(attempt);
        journal.enter(repo, Phase::CommittingUndo)?;
        repo.git(&["revert", "--no-commit", "HEAD"])
            .context("could not undo the attempt")?;
        journal.enter(repo, Phase::CommittingIteration)?;
    }
    let mut block = Block::default();
    iteration.write(&mut block);
    let message = render_message(&subject(&iteration, &kernel_name), notes, &block);
    let id =
        hook::message::commit(repo, &message, !kept).context("could not commit the iteration")?;
    Ok(Recorded { id, iteration })
}

/// Reads well in `git log --oneline`: what happened, by how much, and what was tried.
fn subject(it: &Iteration, kernel: &str) -> String {
    let result = match it.change_pct {
        Some(change) => format!("{} {:+.2}%", it.status, change),
        None => it.status.to_string(),
    };
    format!(
        "cutile-perf: {kernel} #{} {result}: {}",
        it.number, it.optimization
    )
}
