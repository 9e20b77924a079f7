//! The terminal: the [`Ui`] a verb writes through (its report on `out`, progress on `err`, JSON or text,
//! colour), one factory for live (redrawn) lines, which decides whether to draw at all, and plain
//! progress lines for logs and agents. Colour follows console's rules (off when not a TTY, NO_COLOR,
//! TERM=dumb, CLICOLOR=0).

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::rules::decision::{Correctness, Decision, LoopState, Status};

/// Set when this environment variable is present: no live lines even on a terminal (screen readers,
/// recordings, terminals that mangle redraws).
pub const NO_PROGRESS_VARIABLE: &str = "CUTILE_PERF_NO_PROGRESS";

/// Where a verb's words go and how: its report on `out` (JSON under `--json`, else its text), its
/// progress (and that of the layers below it, which the verb hands its [`Progress`]) apart from it,
/// and whether words are coloured. `main` makes one over the terminal; a test makes one over buffers
/// and reads both.
pub struct Ui<'a> {
    out: &'a mut dyn Write,
    progress: Progress,
    json: bool,
    colour: bool,
    /// Whether `out` was closed by its reader (`| head -1`) before the report was all written.
    cut_short: bool,
}

impl<'a> Ui<'a> {
    /// Over stdout and stderr: colour as console decides for stdout, and progress on stderr
    /// ([`Progress::stderr`]).
    pub fn terminal(out: &'a mut dyn Write, json: bool) -> Ui<'a> {
        Ui {
            out,
            progress: Progress::stderr(json),
            json,
            colour: console::colors_enabled(),
            cut_short: false,
        }
    }

    /// Over any writer and progress (a test's buffers), without colour.
    pub fn plain(out: &'a mut dyn Write, progress: Progress, json: bool) -> Ui<'a> {
        Ui {
            out,
            progress,
            json,
            colour: false,
            cut_short: false,
        }
    }

    /// Whether the command line asked for `--json`.
    pub fn json(&self) -> bool {
        self.json
    }

    /// Where the report's text goes.
    pub fn out(&mut self) -> &mut dyn Write {
        self.out
    }

    /// A line of progress or a warning, apart from `out` so that `out` stays clean for `--json`.
    pub fn progress(&mut self, line: &str) {
        self.progress.line(line);
    }

    /// The progress sink the verb hands down to the layers that do its work.
    pub fn sink(&self) -> &Progress {
        &self.progress
    }

    /// The one place a verb's report is printed: as one JSON document under `--json`, else its text. A
    /// reader that closed `out` before the end (`| head -1`) is no failure of the verb, whose work is
    /// done: the rest is dropped and [`Ui::say_if_cut_short`] says so.
    pub fn show(&mut self, report: &impl Render) -> anyhow::Result<()> {
        let shown = match self.json {
            true => write_json(self.out, report),
            false => report.render(self).and_then(|()| Ok(self.out.flush()?)),
        };
        match shown {
            Err(e) if is_closed_pipe(&e) => {
                self.cut_short = true;
                Ok(())
            }
            shown => shown,
        }
    }

    /// Says on the progress sink (stderr) that the report was cut short, if it was.
    pub fn say_if_cut_short(&mut self) {
        if self.cut_short {
            self.progress(
                "the report was cut short: its reader closed stdout (the command itself ran to its end; \
                 `git cutile-perf status` shows the record)",
            );
        }
    }

    pub fn bold<'t>(&self, text: &'t str) -> console::StyledObject<&'t str> {
        bold(text).force_styling(self.colour)
    }

    /// A record word coloured by what it means (when this Ui colours).
    pub fn word(&self, word: impl Word) -> console::StyledObject<&'static str> {
        self::word(word).force_styling(self.colour)
    }
}

/// A verb's report: serialized under `--json`, else rendered as text by `render`.
pub trait Render: serde::Serialize {
    fn render(&self, ui: &mut Ui) -> anyhow::Result<()>;
}

/// The one sink of progress a verb hands down: plain lines (what a log, an agent reading `--json`
/// runs' stderr and the MCP server's progress notifications get) and live lines, redrawn where the
/// sink is a terminal that can redraw. A handle: clones write to the same place, so a Slurm
/// allocation keeps one to say how its job ends.
#[derive(Clone)]
pub struct Progress {
    sink: Arc<Mutex<dyn Write + Send>>,
    /// Whether live lines are drawn (on stderr) instead of printed once as plain lines.
    live: bool,
}

impl Progress {
    /// On stderr. Live lines when stderr is a terminal that can redraw a line (not `TERM=dumb` or
    /// unset), the run is not `--json` (its reader, an agent, gets plain lines, never redraws), and
    /// not [`NO_PROGRESS_VARIABLE`].
    pub fn stderr(json: bool) -> Progress {
        let live = std::io::stderr().is_terminal()
            && !console::is_dumb()
            && !json
            && std::env::var_os(NO_PROGRESS_VARIABLE).is_none();
        Progress {
            sink: Arc::new(Mutex::new(std::io::stderr())),
            live,
        }
    }

    /// Into `writer`, plain lines only.
    pub fn to(writer: impl Write + Send + 'static) -> Progress {
        Progress {
            sink: Arc::new(Mutex::new(writer)),
            live: false,
        }
    }

    /// A line of progress or a warning. (A closed sink loses the line; the work goes on.)
    pub fn line(&self, text: &str) {
        let mut sink = self
            .sink
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = writeln!(sink, "{text}");
        let _ = sink.flush();
    }

    /// A line its owner redraws with `set_message` and clears when done; where this sink draws no
    /// live lines, `plain` is printed once instead and the line is hidden.
    pub fn live_line(&self, plain: &str) -> ProgressBar {
        if !self.live {
            self.line(&format!("{plain} ..."));
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("{wide_msg}").expect("valid template"));
        bar
    }

    /// A spinner, or a hidden one where [`Progress::live_line`] would be hidden.
    pub fn spinner(&self, message: &str) -> ProgressBar {
        let bar = self.live_line(message);
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
    LoopState { Running => Plain, Stopped | Escalated | Foreign => Bad }
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

/// Whether `err` is a write to a pipe its reader closed.
fn is_closed_pipe(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<std::io::Error>())
        .any(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
}

/// Writes a value as one JSON document.
pub fn write_json(out: &mut dyn Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    out.flush()?;
    Ok(())
}
