//! The record stage: the iteration commit, and for a revert or crash the attempt before it.

use anyhow::{Context, Result};

use crate::features::hook;
use crate::record::history::History;
use crate::record::journal::{Journal, Phase};
use crate::record::session::Iteration;
use crate::rules::decision::Status;
use crate::rules::trailers::{Block, one_line, render_message};
use crate::system::git::Repo;

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

/// Reads well in `git log --oneline`: what happened, by how much, and what was tried. A revert names
/// what failed it (a config and its change), never the overall change, which may read as a gain.
fn subject(it: &Iteration, kernel: &str) -> String {
    let result = match (it.status, it.change_pct) {
        (Status::Revert, _) => format!("{} ({})", it.status, it.short_reason()),
        (_, Some(change)) => format!("{} {:+.2}%", it.status, change),
        (_, None) => it.status.to_string(),
    };
    format!(
        "cutile-perf: {kernel} #{} {result}: {}",
        it.number, it.optimization
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::Decision;

    #[test]
    fn a_revert_names_the_config_that_failed_it_never_its_overall_change() {
        let mut reverted = iteration(2, Status::Revert, Some(-3.2), Decision::TryNext);
        reverted.reason =
            "t1 forward: +3.00% (+2.91% to +3.09%), slower than the 2% limit beyond noise".into();
        assert_eq!(
            subject(&reverted, "rms_norm"),
            "cutile-perf: rms_norm #2 revert (t1 forward: +3.00%): opt 2"
        );
        let kept = iteration(1, Status::Keep, Some(-6.0), Decision::Continue);
        assert_eq!(
            subject(&kept, "rms_norm"),
            "cutile-perf: rms_norm #1 keep -6.00%: opt 1"
        );
    }
}
