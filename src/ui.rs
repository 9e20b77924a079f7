//! The terminal: one spinner factory that hides itself off a terminal, and plain progress lines for
//! logs and agents. Colour follows console's rules (off when not a TTY, NO_COLOR, TERM=dumb, CLICOLOR=0).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner on stderr, or a hidden one when stderr is not a terminal.
pub fn spinner(message: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        eprintln!("{message} ...");
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
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

/// Colours a status or decision word by what it means.
pub fn word(text: &str) -> console::StyledObject<&str> {
    let style = console::style(text);
    match text {
        "keep" | "PASS" | "continue" => style.green(),
        "revert" | "FAIL" | "crash" | "stop" | "escalate" => style.red(),
        "lower-priority" | "try-next" => style.yellow(),
        _ => style,
    }
}

/// Prints a value as one JSON document on stdout. A closed pipe (`| head`) comes back as an error
/// for main to treat as success; `println!` would panic instead.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    out.flush()?;
    Ok(())
}
