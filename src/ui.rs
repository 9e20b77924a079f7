//! The terminal: one factory for live (redrawn) lines, which decides whether to draw at all, and plain
//! progress lines for logs and agents. Colour follows console's rules (off when not a TTY, NO_COLOR,
//! TERM=dumb, CLICOLOR=0).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::decision::{Correctness, Decision, LoopState, Status};

/// Set when this environment variable is present: no live lines even on a terminal (screen readers,
/// recordings, terminals that mangle redraws).
pub const NO_PROGRESS_VARIABLE: &str = "CUTILE_PERF_NO_PROGRESS";

/// Whether the verb prints JSON: its reader (an agent) gets plain lines on stderr, never redraws.
static JSON_OUTPUT: AtomicBool = AtomicBool::new(false);

/// Called once by `main` with whether the command line asked for `--json`.
pub fn set_json_output(json: bool) {
    JSON_OUTPUT.store(json, Ordering::Relaxed);
}

/// The one rule for drawing live lines: stderr is a terminal that can redraw a line (not
/// `TERM=dumb` or unset), not `--json`, and not [`NO_PROGRESS_VARIABLE`].
pub fn live_lines() -> bool {
    std::io::stderr().is_terminal()
        && !console::is_dumb()
        && !JSON_OUTPUT.load(Ordering::Relaxed)
        && std::env::var_os(NO_PROGRESS_VARIABLE).is_none()
}

/// A line on stderr that its owner redraws with `set_message` and clears when done; when
/// [`live_lines`] says no, `plain` is printed once instead and the line is hidden.
pub fn live_line(plain: &str) -> ProgressBar {
    if !live_lines() {
        progress_line(&format!("{plain} ..."));
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(ProgressStyle::with_template("{wide_msg}").expect("valid template"));
    bar
}

/// A spinner on stderr, or a hidden one where [`live_line`] would be hidden.
pub fn spinner(message: &str) -> ProgressBar {
    let bar = live_line(message);
    if bar.is_hidden() {
        return bar;
    }
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]").expect("valid template"),
    );
    bar.set_message(message.to_string());
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// A line of progress on stderr, so stdout stays clean for `--json`.
pub fn progress_line(text: &str) {
    eprintln!("{text}");
}

pub fn bold(text: &str) -> console::StyledObject<&str> {
    console::style(text).bold()
}

/// What a word means to the reader, which decides its colour.
pub enum Tone {
    Good,
    Bad,
    Caution,
    Plain,
}

/// A word of the record (status, correctness, decision, loop state) with the tone it is shown in.
pub trait Word {
    fn text(&self) -> &'static str;
    fn tone(&self) -> Tone;
}

/// Each enum's tones as an exhaustive match, so a new variant cannot go uncoloured by accident.
macro_rules! tones {
    ($($kind:ident { $($($variant:ident)|+ => $tone:ident),+ $(,)? })+) => {
        $(impl Word for $kind {
            fn text(&self) -> &'static str {
                self.as_str()
            }
            fn tone(&self) -> Tone {
                match self {
                    $($($kind::$variant)|+ => Tone::$tone),+
                }
            }
        })+
    };
}

tones! {
    Status { Keep => Good, Revert | Crash => Bad }
    Correctness { Pass => Good, Fail => Bad }
    Decision { Continue => Good, LowerPriority | TryNext => Caution, Stop | Escalate => Bad }
    LoopState { Running => Plain, Stopped | Escalated => Bad }
}

/// A record word coloured by what it means.
pub fn word(word: impl Word) -> console::StyledObject<&'static str> {
    let style = console::style(word.text());
    match word.tone() {
        Tone::Good => style.green(),
        Tone::Bad => style.red(),
        Tone::Caution => style.yellow(),
        Tone::Plain => style,
    }
}

/// Prints a value as one JSON document on stdout. (A closed pipe, `| head`, ends the process quietly:
/// `main` leaves SIGPIPE at its default.)
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    write_json(&mut std::io::stdout().lock(), value)
}

/// Writes a value as one JSON document.
pub fn write_json(
    out: &mut impl std::io::Write,
    value: &impl serde::Serialize,
) -> anyhow::Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    out.flush()?;
    Ok(())
}
