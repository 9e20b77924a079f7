//! The live progress line while pytest runs: drawn on a terminal (a pseudo-terminal made by
//! util-linux's `script`), never off one, under `--json` or with CUTILE_PERF_NO_PROGRESS set.

use crate::support;

use std::process::Command;

use support::*;

/// Text only the live line has.
const LIVE: &str = " elapsed, ";

/// The tool run with `args` on a pseudo-terminal; returns everything the terminal received. `script`
/// comes with util-linux (Debian's bsdutils, on every Debian): a machine without it fails the test.
fn on_terminal(f: &Fixture, args: &[&str], setup: impl FnOnce(&mut Command)) -> String {
    let quoted: Vec<String> = std::iter::once(BIN.to_str().unwrap())
        .chain(args.iter().copied())
        .map(|word| format!("'{}'", word.replace('\'', r"'\''")))
        .collect();
    let mut script = f.program("script", &f.root);
    script
        .args(["-qec", &quoted.join(" "), "/dev/null"])
        .env("TERM", "xterm");
    setup(&mut script);
    let out = script.output().unwrap_or_else(|e| {
        panic!("no `script` to make a pseudo-terminal ({e}): install util-linux (bsdutils)")
    });
    assert!(out.status.success(), "{args:?} failed:\n{}", both(&out));
    both(&out)
}

#[test]
fn off_a_terminal_only_plain_lines_name_each_run() {
    let f = Fixture::new();
    let started = f.ok_all(&["start", "vector_add"]);
    f.set_latency(0.09, 0.9);
    let stepped = f.ok_all(&["step", "--opt", "none", "tile size 256"]);
    for (output, lines) in [
        (
            &started,
            &[
                // iteration 0 runs in the baseline's warm worker, kept for the first step
                "correctness: in the warm baseline worker, 6 cases, 0 failed, in ",
                "baseline 1/2: in the warm baseline worker, 2 cases, 0 failed, in ",
                "baseline 2/2: in the warm baseline worker, 2 cases, 0 failed, in ",
            ][..],
        ),
        (
            &stepped,
            // the step's runs are repetitions in the warm workers
            &[
                "correctness: in the warm candidate worker, 6 cases, 0 failed, in ",
                "round 1 candidate: in the warm candidate worker, 2 cases, 0 failed, in ",
                "round 1 baseline: in the warm baseline worker, 2 cases, 0 failed, in ",
            ][..],
        ),
    ] {
        assert!(!output.contains(LIVE), "{output}");
        assert!(!output.contains('\r'), "{output}");
        for line in lines {
            assert!(output.contains(line), "{line:?} missing from:\n{output}");
        }
    }
    // a worker's first command says what its start-up cost; one kept from `start` paid it there
    let start_up = |output: &str, label: &str| {
        let line = output.lines().find(|l| l.starts_with(label)).unwrap();
        line.contains(" (its start-up before it: ") && line.ends_with("s)")
    };
    assert!(start_up(&started, "correctness:"), "{started}");
    assert!(!start_up(&started, "baseline 1/2:"), "{started}");
    assert!(start_up(&stepped, "correctness:"), "{stepped}");
    assert!(!start_up(&stepped, "round 1 baseline:"), "{stepped}");
}

#[test]
fn on_a_terminal_the_line_is_drawn_then_cleared_unless_told_not_to() {
    let f = Fixture::new();
    // colour where the terminal allows it
    let started = on_terminal(&f, &["start", "vector_add", "--no-gpu"], |cmd| {
        cmd.env_remove("NO_COLOR");
        // iteration 0 runs in warm workers; a perf case exits them here, so the benchmark runs are
        // processes of their own, drawn live
        cmd.env("CUTILE_PERF_FIXTURE_EXIT_ON_REPEAT", "worker");
    });
    assert!(started.contains(LIVE), "{started}");
    assert!(
        started.contains("\x1b[1mbaseline 2/2\x1b[0m  "),
        "not drawn in bold:\n{started:?}"
    );
    // cleared before the line that ends the run
    assert!(
        started.contains("\r\x1b[2Kbaseline 2/2: exit 0 in "),
        "{started:?}"
    );

    f.set_latency(0.09, 0.9);
    let stepped = on_terminal(&f, &["step", "--opt", "none", "tile size 256"], |_| {});
    // every run of the step is a command to a warm worker, which says its line when done: none is drawn
    assert!(!stepped.contains(LIVE), "{stepped}");
    for label in ["correctness: in the warm", "round 1 candidate: in the warm"] {
        assert!(
            stepped.contains(label),
            "{label:?} missing from:\n{stepped}"
        );
    }
    // NO_COLOR (the harness sets it)
    assert!(!stepped.contains("\x1b[1m"), "{stepped:?}");

    f.set_latency(0.08, 0.8);
    let json = on_terminal(
        &f,
        &["step", "--opt", "none", "--json", "persistent"],
        |_| {},
    );
    assert!(!json.contains(LIVE), "{json}");
    assert!(json.contains("\"status\": \"keep\""), "{json}");

    f.set_latency(0.07, 0.7);
    let quiet = on_terminal(&f, &["step", "--opt", "none", "smaller tiles"], |cmd| {
        cmd.env("CUTILE_PERF_NO_PROGRESS", "1");
    });
    assert!(!quiet.contains(LIVE), "{quiet}");
    assert!(
        quiet.contains("round 1 candidate: in the warm candidate worker"),
        "{quiet}"
    );
}
