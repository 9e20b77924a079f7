//! The live progress line of a pytest run, e.g.
//! `correctness  12/40  tests/ops/test_x.py::test_op[case]  0:42 elapsed, 8:18 left`.
//!
//! pytest already runs with `-v`, which is all the line needs, so its flags (and the JUnit file the
//! verdicts read) are untouched: the "collected N items / M deselected / K selected" line gives the
//! total, and each case's id is written when the case starts, its outcome word (PASSED, FAILED,
//! SKIPPED, ERROR, XFAIL, XPASS) on the same line when it ends. The process that runs pytest is not
//! touched either: a thread follows the log file that pytest writes anyway, and [`Parser`] (pure) reads
//! what it finds there.

use std::collections::HashSet;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;

use crate::system::ui;

/// The words pytest -v writes after a case's id when the case ends.
const OUTCOMES: [&str; 6] = ["PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS"];

/// How often the line is redrawn from the log: often enough for the clocks to tick.
const REDRAW: Duration = Duration::from_millis(200);

/// Where a run stands, as far as its output tells.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    /// The cases selected to run; none until pytest has collected them.
    pub total: Option<usize>,
    /// Cases that ended, each counted once (a case that passes and then errors in teardown has two
    /// outcome lines).
    pub done: usize,
    /// The case running now, when its id stands alone on the last line.
    pub current: Option<String>,
}

/// Reads pytest's verbose output as it streams in, in chunks cut anywhere.
#[derive(Debug, Default)]
pub struct Parser {
    /// What follows the last newline so far.
    partial: Vec<u8>,
    ended: HashSet<String>,
    total: Option<usize>,
    current: Option<String>,
}

impl Parser {
    pub fn feed(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            self.line(String::from_utf8_lossy(&line).trim_end());
        }
        // pytest writes `<id> ` when a case starts and flushes; the outcome follows when it ends
        let partial = String::from_utf8_lossy(&self.partial);
        let started = partial
            .strip_suffix(' ')
            .filter(|id| is_case_id(id) && ended_case(&partial).is_none());
        if let Some(id) = started {
            self.current = Some(id.to_string());
        }
    }

    pub fn tally(&self) -> Tally {
        Tally {
            total: self.total,
            done: self.ended.len(),
            current: self.current.clone(),
        }
    }

    fn line(&mut self, line: &str) {
        if let Some(total) = collected(line) {
            self.total = Some(total);
        } else if let Some(id) = ended_case(line) {
            self.ended.insert(id.to_string());
            self.current = None;
        } else if bare_outcome(line) {
            // a case that printed past the capture: its outcome lands on a line of its own
            if let Some(id) = self.current.take() {
                self.ended.insert(id);
            }
        }
    }
}

/// The number of selected cases in `collecting ... collected 7 items / 2 deselected / 5 selected`
/// (7 without a `-k` that deselects).
fn collected(line: &str) -> Option<usize> {
    let line = line.strip_prefix("collecting ... ").unwrap_or(line);
    let counts = line.strip_prefix("collected ")?;
    let number = |part: &str, unit: &str| -> Option<usize> {
        let (count, word) = part.trim().split_once(' ')?;
        (word == unit || word == format!("{unit}s") || word.strip_suffix('s') == Some(unit))
            .then(|| count.parse().ok())
            .flatten()
    };
    let mut parts = counts.split(" / ");
    let items = parts.next().and_then(|part| number(part, "item"))?;
    Some(
        parts
            .find_map(|part| number(part, "selected"))
            .unwrap_or(items),
    )
}

/// The id in `tests/test_x.py::test_op[7] PASSED   [ 40%]`.
fn ended_case(line: &str) -> Option<&str> {
    line.match_indices(' ').find_map(|(at, _)| {
        let id = line[..at].trim_end();
        (starts_with_outcome(&line[at + 1..]) && is_case_id(id)).then_some(id)
    })
}

/// `PASSED   [ 40%]` or `SKIPPED (needs sm_100)` with no id before it; not a summary line such as
/// `FAILED tests/test_x.py::test_op - assert False`, which names its case.
fn bare_outcome(line: &str) -> bool {
    starts_with_outcome(line) && !line.contains("::")
}

fn starts_with_outcome(text: &str) -> bool {
    OUTCOMES.iter().any(|word| {
        text.strip_prefix(word)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    })
}

/// A node id: its first word is `path::name` (a parameter in brackets may hold spaces), the path
/// printable and not a decoration (`[gw0]`, `====`, `____`).
fn is_case_id(text: &str) -> bool {
    let first = text.split(' ').next().unwrap_or_default();
    first.split_once("::").is_some_and(|(path, name)| {
        !path.is_empty()
            && !name.is_empty()
            && !path.starts_with(['[', '=', '_'])
            && !path
                .chars()
                .any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER)
    })
}

/// `m:ss`, or `h:mm:ss` from an hour on.
pub fn clock(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    match hours {
        0 => format!("{minutes}:{seconds:02}"),
        _ => format!("{hours}:{minutes:02}:{seconds:02}"),
    }
}

/// The line's text in at most `width` characters: the case's id loses its start first (its
/// parameters, at the end, tell cases apart), then goes altogether.
pub fn line(label: &str, tally: &Tally, elapsed: Duration, left: Duration, width: usize) -> String {
    let count = match (tally.total, tally.done) {
        (Some(total), done) => format!("{done}/{total}"),
        (None, 0) => "collecting".to_string(),
        (None, done) => format!("{done}/?"),
    };
    let clocks = format!("{} elapsed, {} left", clock(elapsed), clock(left));
    let bare = format!("{label}  {count}  {clocks}");
    let Some(case) = &tally.current else {
        return bare;
    };
    let room = width.saturating_sub(bare.chars().count() + 2);
    let length = case.chars().count();
    let case = match room {
        _ if length <= room => case.clone(),
        0..=8 => return bare,
        _ => format!(
            "…{}",
            case.chars().skip(length - (room - 1)).collect::<String>()
        ),
    };
    format!("{label}  {count}  {case}  {clocks}")
}

/// Runs `run`, which runs pytest with its output going to `log` (a fresh file: a stale one must be
/// removed first), under a live line labelled `label` that follows the log until `run` returns, then
/// clears it. Where `sink` draws no live lines, `plain` is printed once instead.
pub fn follow<T>(
    sink: &ui::Progress,
    log: &Path,
    label: &str,
    plain: &str,
    deadline: Instant,
    run: impl FnOnce() -> T,
) -> T {
    let bar = sink.live_line(plain);
    if bar.is_hidden() {
        return run();
    }
    let finished = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        let follower = scope.spawn(|| redraw(&bar, log, label, deadline, &finished));
        // the scope waits for the follower, so it must be told to stop even if `run` panics
        let _stop = Stop(&finished, follower.thread().clone());
        run()
    });
    bar.finish_and_clear();
    result
}

/// Tells the follower to stop, and wakes it, when dropped.
struct Stop<'a>(&'a AtomicBool, std::thread::Thread);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
        self.1.unpark();
    }
}

/// Reads what the log gained and redraws, until `finished`.
fn redraw(bar: &ProgressBar, log: &Path, label: &str, deadline: Instant, finished: &AtomicBool) {
    let started = Instant::now();
    let mut parser = Parser::default();
    let mut file: Option<File> = None;
    let mut chunk = Vec::new();
    let mut shown = String::new();
    while !finished.load(Ordering::SeqCst) {
        // the log appears once pytest is started
        file = file.or_else(|| File::open(log).ok());
        if let Some(file) = &mut file {
            chunk.clear();
            if file.read_to_end(&mut chunk).is_ok() {
                parser.feed(&chunk);
            }
        }
        let width = console::Term::stderr().size().1 as usize;
        let text = line(
            label,
            &parser.tally(),
            started.elapsed(),
            deadline.saturating_duration_since(Instant::now()),
            width.saturating_sub(1),
        );
        // the clocks change once a second: no need to redraw more often than that
        if text != shown {
            let styled = match text.strip_prefix(label) {
                Some(rest) => format!("{}{rest}", console::style(label).bold().for_stderr()),
                None => text.clone(),
            };
            bar.set_message(styled);
            shown = text;
        }
        std::thread::park_timeout(REDRAW);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally_of(output: &str) -> Tally {
        let mut parser = Parser::default();
        parser.feed(output.as_bytes());
        parser.tally()
    }

    fn tally(total: Option<usize>, done: usize, current: Option<&str>) -> Tally {
        Tally {
            total,
            done,
            current: current.map(str::to_string),
        }
    }

    const HEADER: &str = "\
============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /usr/bin/python3
rootdir: /home/user/TileGym
configfile: pytest.ini
";

    #[test]
    fn counts_selected_cases_and_shows_the_one_that_runs() {
        let output = format!(
            "{HEADER}collecting ... collected 9 items / 5 deselected / 4 selected\n\n\
             tests/ops/test_rope.py::test_op[1-cutile] PASSED                     [ 25%]\n\
             tests/ops/test_rope.py::test_op[7-cutile] PASSED                     [ 50%]\n\
             tests/ops/test_rope.py::test_op[1000-cutile] "
        );
        assert_eq!(
            tally_of(&output),
            tally(
                Some(4),
                2,
                Some("tests/ops/test_rope.py::test_op[1000-cutile]")
            )
        );
    }

    #[test]
    fn a_finished_run_has_no_current_case() {
        let output = format!(
            "{HEADER}collecting ... collected 2 items\n\n\
             tests/ops/test_x.py::test_perf[cutile-small] PASSED             [ 50%]\n\
             tests/ops/test_x.py::test_perf[cutile-large] PASSED             [100%]\n\n\
             ============================== 2 passed in 0.04s ===============================\n"
        );
        assert_eq!(tally_of(&output), tally(Some(2), 2, None));
    }

    #[test]
    fn one_item_and_zero_items_are_totals_too() {
        assert_eq!(tally_of("collected 1 item\n"), tally(Some(1), 0, None));
        assert_eq!(
            tally_of("collecting ... collected 0 items\n"),
            tally(Some(0), 0, None)
        );
        assert_eq!(
            tally_of("collecting ... collected 3 items / 1 error\n"),
            tally(Some(3), 0, None)
        );
    }

    #[test]
    fn skips_failures_errors_and_xfails_all_end_a_case_once() {
        let output = "\
collecting ... collected 8 items / 1 deselected / 7 selected

tests/test_a.py::test_arch[sm90] PASSED                              [ 14%]
tests/test_a.py::test_arch[sm100] SKIPPED (needs sm_100)             [ 28%]
tests/test_a.py::test_setup ERROR                                    [ 42%]
tests/test_a.py::test_teardown PASSED                                [ 57%]
tests/test_a.py::test_teardown ERROR                                 [ 57%]
tests/test_a.py::test_wrong FAILED                                   [ 71%]
tests/test_a.py::test_known XFAIL (flaky on sm80)                    [ 85%]
tests/test_a.py::test_f[a b] XPASS                                   [100%]

==================================== ERRORS ====================================
___________________________ ERROR at setup of test_setup _______________________
E       RuntimeError: x
tests/test_a.py:4: RuntimeError
=========================== short test summary info ============================
FAILED tests/test_a.py::test_wrong - assert False
ERROR tests/test_a.py::test_setup - RuntimeError: x
ERROR tests/test_a.py::test_teardown - ERROR in teardown PASSED
===== 1 failed, 3 passed, 1 skipped, 1 xfailed, 1 xpassed, 2 errors in 1.58s =====
";
        assert_eq!(tally_of(output), tally(Some(7), 7, None));
    }

    #[test]
    fn chunks_cut_anywhere_read_the_same() {
        let output = "collecting ... collected 3 items\n\n\
                      tests/t.py::test_a[\u{fc}] PASSED  [ 33%]\n\
                      tests/t.py::test_b PASSED  [ 66%]\n\
                      tests/t.py::test_c ";
        let whole = tally_of(output);
        assert_eq!(whole, tally(Some(3), 2, Some("tests/t.py::test_c")));
        for size in 1..7 {
            let mut parser = Parser::default();
            for chunk in output.as_bytes().chunks(size) {
                parser.feed(chunk);
            }
            assert_eq!(parser.tally(), whole, "chunks of {size} bytes");
        }
    }

    #[test]
    fn an_outcome_after_uncaptured_output_ends_the_running_case() {
        let output =
            "collected 2 items\n\ntests/t.py::test_a hello from the kernel\nPASSED   [ 50%]\n";
        let mut parser = Parser::default();
        parser.feed(b"collected 2 items\n\ntests/t.py::test_a ");
        assert_eq!(
            parser.tally(),
            tally(Some(2), 0, Some("tests/t.py::test_a"))
        );
        parser.feed(&output.as_bytes()[b"collected 2 items\n\ntests/t.py::test_a ".len()..]);
        assert_eq!(parser.tally(), tally(Some(2), 1, None));
    }

    #[test]
    fn garbage_counts_nothing() {
        let output = "\
Traceback (most recent call last):
  File \"x.py\", line 1, in <module>
ERROR: usage: pytest [options] [file_or_dir]
E   assert tests/x.py::y PASSED
[gw0] [ 50%] PASSED tests/t.py::test_a
collected many items
collected 3 things
\u{0}\u{1}binary\u{fffd}:: PASSED
::  
PASSED
";
        assert_eq!(tally_of(output), tally(None, 0, None));
        let mut parser = Parser::default();
        parser.feed(&[0xff, 0xfe, b'\n', 0x80, b' ']);
        assert_eq!(parser.tally(), tally(None, 0, None));
    }

    #[test]
    fn clocks_show_minutes_and_hours() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00");
        assert_eq!(clock(Duration::from_millis(42_900)), "0:42");
        assert_eq!(clock(Duration::from_secs(498)), "8:18");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 65)), "3:01:05");
    }

    #[test]
    fn the_line_fits_the_terminal_by_shortening_the_case_from_its_start() {
        let running = tally(Some(40), 12, Some("tests/ops/test_x.py::test_op[case]"));
        let (elapsed, left) = (Duration::from_secs(42), Duration::from_secs(498));
        assert_eq!(
            line("correctness", &running, elapsed, left, 100),
            "correctness  12/40  tests/ops/test_x.py::test_op[case]  0:42 elapsed, 8:18 left"
        );
        assert_eq!(
            line("correctness", &running, elapsed, left, 60),
            "correctness  12/40  …:test_op[case]  0:42 elapsed, 8:18 left"
        );
        assert_eq!(
            line("correctness", &running, elapsed, left, 50),
            "correctness  12/40  0:42 elapsed, 8:18 left"
        );
        assert_eq!(
            line(
                "round 2 baseline",
                &tally(None, 0, None),
                elapsed,
                left,
                100
            ),
            "round 2 baseline  collecting  0:42 elapsed, 8:18 left"
        );
        assert_eq!(
            line("baseline 1/2", &tally(None, 3, None), elapsed, left, 100),
            "baseline 1/2  3/?  0:42 elapsed, 8:18 left"
        );
    }
}
