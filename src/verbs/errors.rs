//! How a failure reaches the user: `error: ...` with its `hint:` line on stderr, or, when the command
//! line asked for `--json`, one object on stdout (`{"error", "hint", "exit_code"}`) so that an agent
//! reading stdout sees failures in the same shape as results. The exit code is the same either way.

use std::process::ExitCode;

use crate::rules::hint::{self, Hinted};
use crate::system::process::Interrupted;
use crate::system::ui::{self, Ui};

/// Exit code of an interrupted `start` or `step` (128 + SIGINT, as shells report it).
const INTERRUPTED: u8 = 130;

#[derive(serde::Serialize, Debug, PartialEq)]
pub struct ErrorReport {
    pub error: String,
    pub hint: Option<String>,
    pub exit_code: u8,
}

impl ErrorReport {
    /// A failure's report: its message with the contexts, and apart from it the hint of the
    /// [`Hinted`] failure among them (or of the [`Reported`] one).
    pub fn of(err: &anyhow::Error, exit_code: u8) -> ErrorReport {
        let reported = err.downcast_ref::<Reported>().map(|reported| &reported.0);
        ErrorReport {
            error: format!("{err:#}"),
            hint: (hint::of(err).or_else(|| reported.and_then(|r| r.hint.as_deref())))
                .map(str::to_string),
            exit_code,
        }
    }
}

/// A failure whose JSON report is on stdout already (`verify --json` with findings): under `--json`
/// only the exit code is left to give.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Reported(pub Hinted);

/// Reports a failed verb through its [`Ui`] and returns its exit code.
pub fn report(ui: &mut Ui, err: &anyhow::Error) -> ExitCode {
    let json = ui.json();
    if json && err.downcast_ref::<Reported>().is_some() {
        return ExitCode::from(1);
    }
    let interrupted = err.is::<Interrupted>() || err.is::<crate::system::process::GitInterrupted>();

    let code = if interrupted { INTERRUPTED } else { 1 };
    let report = ErrorReport::of(err, code);
    if json {
        return print(ui.out(), &report);
    }
    if interrupted {
        let interrupted = Hinted {
            message: err.to_string(),
            hint: hint::of(err).map(str::to_string),
        };
        ui.progress(&interrupted.shown());
    } else {
        ui.progress(&format!(
            "{} {}",
            console::style("error:").for_stderr().red().bold(),
            Hinted {
                message: report.error,
                hint: report.hint
            }
            .shown()
        ));
    }
    ExitCode::from(code)
}

/// Writes a failure's report as one JSON object and gives its exit code.
pub fn print(out: &mut dyn std::io::Write, report: &ErrorReport) -> ExitCode {
    // stdout may be closed already; the exit code still tells
    let _ = ui::write_json(out, report);
    ExitCode::from(report.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_hint_of_a_hinted_failure_under_its_contexts() {
        use anyhow::Context;
        let failure: anyhow::Result<()> =
            Err(crate::rules::hint::hinted("no session", "run `start`"));
        let report = ErrorReport::of(&failure.context("status").unwrap_err(), 1);
        assert_eq!(report.error, "status: no session");
        assert_eq!(report.hint.as_deref(), Some("run `start`"));
        let hinted_context: anyhow::Result<()> =
            Err(anyhow::anyhow!("exit 1")).context(Hinted::new("git failed", "run it again"));
        let report = ErrorReport::of(&hinted_context.unwrap_err(), 1);
        assert_eq!(report.error, "git failed: exit 1");
        assert_eq!(report.hint.as_deref(), Some("run it again"));
    }
}
