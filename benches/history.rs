//! What reading the record costs as a session grows: `cargo bench --bench history` prints, for synthetic
//! sessions of 100 / 1,000 / 10,000 iterations x 10 / 180 configs (TileGym's matmul grid has 180), fresh
//! and repacked, the wall time and peak memory of `table`, `status` and one pre-commit hook run, next to
//! C git reading the same trailers (`git log --format=%(trailers)`). Each figure is the median of RUNS
//! runs; memory is the child's own peak resident set (wait4's rusage).
//!
//! The sessions are written with git fast-import from messages made by the tool's own writers (through
//! the library), so they are exactly what `start` and `step` commit. `CUTILE_PERF_BENCH_SIZES=100x10`
//! (comma-separated) picks other sizes.
//!
//! A second table measures `verify`, which reads everything: sessions whose every commit carries the
//! evidence note the tool attaches (its runs' JUnit files, bound to the commit), every third iteration
//! reverted on its attempt, next to C git reading the same commits, changed paths and notes
//! (`git log --first-parent --name-only --notes`). `verify` must find the record whole before it is
//! timed. `CUTILE_PERF_BENCH_VERIFY_SIZES` picks its sizes.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use git_cutile_perf::record::audit;
use git_cutile_perf::record::evidence::{Binding, Evidence, RunFile};
use git_cutile_perf::record::session::{Iteration, Session};
use git_cutile_perf::rules::decision::{Correctness, Decision, Status};
use git_cutile_perf::rules::records::{Measurement, RecordFile, RecordFormat};
use git_cutile_perf::rules::trailers::{Block, render_message};
use support::{
    BIN, Fixture, KERNEL, TEST, baseline_message, measured_baseline_message, session_of,
};

const RUNS: usize = 5;
const BRANCH: &str = "cutile-perf-vector_add-20260101";

fn main() {
    let sizes = std::env::var("CUTILE_PERF_BENCH_SIZES")
        .unwrap_or_else(|_| "100x10,100x180,1000x10,1000x180,10000x10,10000x180".into());
    println!(
        "median of {RUNS} runs; time in ms, peak memory in MiB; binary {}\n",
        BIN.display()
    );
    println!(
        "{:>17} {:>9} | {:>16} {:>16} {:>16} | {:>16}",
        "iterations x cfg", "pack", "table", "status", "hook", "git log trailers"
    );
    for size in sizes.split(',') {
        let (iterations, configs) = size.split_once('x').expect("NxM");
        let (iterations, configs): (usize, usize) =
            (iterations.parse().unwrap(), configs.parse().unwrap());
        let f = session(iterations, configs);
        for packed in [false, true] {
            if packed {
                f.git(&["repack", "-adq"]);
                f.git(&["prune-packed"]);
            }
            let tool = |args: &[&str]| measure(&f, BIN.as_os_str(), args);
            let table = tool(&["table"]);
            let status = tool(&["status"]);
            let hook = tool(&["hook", "pre-commit"]);
            let git = measure(&f, "git".as_ref(), &["log", "--format=%(trailers)", BRANCH]);
            println!(
                "{:>17} {:>9} | {} {} {} | {}",
                format!("{iterations} x {configs}"),
                if packed { "repacked" } else { "fresh" },
                table,
                status,
                hook,
                git
            );
        }
    }
    verify_table();
}

/// `verify` on sessions whose every commit carries its evidence note, repacked, next to C git reading
/// the same commits, notes and changed paths. `CUTILE_PERF_BENCH_VERIFY_SIZES` picks other sizes.
fn verify_table() {
    let sizes = std::env::var("CUTILE_PERF_BENCH_VERIFY_SIZES")
        .unwrap_or_else(|_| "1000x10,10000x10,1000x180,10000x180".into());
    println!(
        "\n{:>17} | {:>16} | {:>16}",
        "iterations x cfg", "verify", "git log notes"
    );
    for size in sizes.split(',') {
        let (iterations, configs) = size.split_once('x').expect("NxM");
        let f = evidenced_session(iterations.parse().unwrap(), configs.parse().unwrap());
        f.git(&["repack", "-adq"]);
        f.git(&["prune-packed"]);
        let holds = f.run_in(&f.root, BIN.to_str().unwrap(), &["verify"]);
        assert!(
            holds.status.success(),
            "verify found the synthetic record broken:\n{}",
            String::from_utf8_lossy(&holds.stdout)
        );
        let verify = measure(&f, BIN.as_os_str(), &["verify"]);
        // what git reads for the same data: each commit, its changed paths and its note
        let git = measure(
            &f,
            "git".as_ref(),
            &[
                "log",
                "--first-parent",
                "--name-only",
                "--notes=cutile-perf",
                "--format=%H %T %P%n%(trailers)%N",
                BRANCH,
            ],
        );
        println!(
            "{:>17} | {verify} | {git}",
            format!("{iterations} x {configs}")
        );
    }
}

/// A repository on a session branch with `iterations` iterations of `configs` configs each.
fn session(iterations: usize, configs: usize) -> Fixture {
    let f = Fixture::new();
    let parent = f.head();
    let mut import = f
        .program("git", &f.root)
        .args(["fast-import", "--quiet", "--done"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = std::io::BufWriter::new(import.stdin.take().unwrap());
    let mut commit = |mark: usize, from: &str, message: &str| {
        writeln!(input, "commit refs/heads/{BRANCH}\nmark :{mark}").unwrap();
        writeln!(
            input,
            "committer Bench <bench@example.com> 1767225600 +0000"
        )
        .unwrap();
        writeln!(input, "data {}\n{message}\nfrom {from}", message.len()).unwrap();
    };
    commit(1, &parent, &baseline_message(KERNEL, TEST, &[KERNEL]));
    for number in 1..=iterations {
        let mut block = Block::default();
        iteration(number as u32, configs).write(&mut block);
        let message = render_message(&format!("cutile-perf: vector_add #{number}"), None, &block);
        commit(number + 1, &format!(":{number}"), &message);
    }
    writeln!(input, "done").unwrap();
    drop(input);
    assert!(import.wait().unwrap().success());
    f.git(&["checkout", "-q", BRANCH]);
    // the first read records the baseline ref that later hook runs read (as `start` does)
    f.ok(&["status"]);
    f
}

fn iteration(number: u32, configs: usize) -> Iteration {
    let status = if number.is_multiple_of(3) {
        Status::Revert
    } else {
        Status::Keep
    };
    Iteration {
        number,
        optimization: format!("optimization {number}"),
        letter: None,
        cause: None,
        latency_ms: Some(1.0),
        correctness: Correctness::Pass,
        status,
        baseline_ms: 1.0,
        change_pct: Some(0.0),
        decision: Decision::Continue,
        reason: "synthetic".into(),
        configs: (0..configs)
            .map(|c| Measurement {
                pass: "forward".into(),
                test: format!(
                    "tests/ops/test_matmul.py::test_perf[cutile-{c}-4096-4096-4096-bf16]"
                ),
                value: 0.1 + (number as f64 + c as f64) * 1e-6,
                mean: None,
            })
            .collect(),
        attempt: None,
        rounds: None,
        placement: None,
    }
}

/// "time ms / memory MiB" of a program run in the fixture, medians of RUNS runs.
fn measure(f: &Fixture, program: &std::ffi::OsStr, args: &[&str]) -> String {
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..RUNS {
        let (time, peak_kib) = run(f, program, args, &f.root);
        times.push(time);
        peaks.push(peak_kib);
    }
    times.sort();
    peaks.sort();
    format!(
        "{:>8.1} / {:>5.1}",
        times[RUNS / 2].as_secs_f64() * 1e3,
        peaks[RUNS / 2] as f64 / 1024.0
    )
}

/// Runs one child to its end; its wall time and its own peak resident set (KiB).
fn run(f: &Fixture, program: &std::ffi::OsStr, args: &[&str], dir: &Path) -> (Duration, i64) {
    let started = Instant::now();
    // reaped by wait4 below, which also gives its resource usage
    #[allow(clippy::zombie_processes)]
    let child = f
        .program(program, dir)
        .args(args)
        .env("GIT_INDEX_FILE", ".git/index")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for the child we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    let elapsed = started.elapsed();
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{program:?} {args:?}"
    );
    (elapsed, usage.ru_maxrss)
}

/// A session as `start` and `step` record it, every commit with the evidence note they attach, so that
/// `verify` recomputes each: the baseline measured twice, then iterations of correctness and one paired
/// round, every third reverted (one config 25% slower, its attempt undone) and the rest kept (every config
/// 10% faster), each kept commit and attempt editing the kernel. Each iteration's trailers are what the
/// tool's own replay and rules give its note. Written in-process (gix), not by fast-import: an iteration
/// names its attempt's id and a note its commit's.
fn evidenced_session(iterations: usize, configs: usize) -> Fixture {
    let f = Fixture::new();
    let session = session_of(KERNEL, TEST, &[KERNEL]);
    let tree_of = |f: &Fixture| f.git(&["rev-parse", "HEAD^{tree}"]).trim().to_string();
    let unedited = tree_of(&f);
    std::fs::write(f.root.join(KERNEL), "# tuned\n").unwrap();
    f.git(&["commit", "-qam", "edit"]);
    let trees = [unedited, tree_of(&f)].map(|t| gix::ObjectId::from_hex(t.as_bytes()).unwrap());
    f.git(&["reset", "-q", "--hard", "HEAD^"]);
    let repo = gix::open(&f.root).unwrap();
    let commit = |tree: gix::ObjectId, parent: &str, message: &str| -> String {
        let signature = gix::actor::Signature {
            name: "Bench".into(),
            email: "bench@example.com".into(),
            time: gix::date::Time::new(1767225600, 0),
        };
        let commit = gix::objs::Commit {
            tree,
            parents: [gix::ObjectId::from_hex(parent.as_bytes()).unwrap()].into(),
            author: signature.clone(),
            committer: signature,
            encoding: None,
            message: message.into(),
            extra_headers: Vec::new(),
        };
        repo.write_object(&commit).unwrap().to_string()
    };
    let mut notes = Vec::new();
    // the note `Evidence::attach` writes, bound to the commit as `Binding::of` reads it
    let mut note = |evidence: Evidence,
                    commit: &str,
                    tree: gix::ObjectId,
                    parent: &str,
                    attempt_tree: Option<String>,
                    message: &str| {
        let evidence = Evidence {
            binding: Some(Binding {
                commit: commit.to_string(),
                tree: tree.to_string(),
                parents: vec![parent.to_string()],
                attempt_tree,
                trailers: Block::from_message(message).render(),
            }),
            ..evidence
        };
        let blob = repo
            .write_blob(evidence.to_note().unwrap())
            .unwrap()
            .detach();
        notes.push((commit.to_string(), blob));
    };

    let base: Vec<f64> = (0..configs).map(|c| 0.1 + c as f64 * 1e-3).collect();
    let correctness = RunFile::new("correctness", junit(CORRECTNESS_CASE));
    let baseline_runs = vec![
        correctness.clone(),
        RunFile::new("benchmark-1", perf_junit(&base)),
        RunFile::new("benchmark-2", perf_junit(&base)),
    ];
    let measured =
        git_cutile_perf::record::replay::measured(&baseline_runs[1], session.statistic).unwrap();
    let message = measured_baseline_message(&session, measured);
    let mut tip = commit(trees[0], &f.head(), &message);
    f.git(&[
        "update-ref",
        &git_cutile_perf::system::git::baseline_ref(BRANCH),
        &tip,
    ]);
    let baseline_evidence = Evidence::new(&session, 0, None, baseline_runs);
    let baseline_passed = baseline_evidence.passed_cases().unwrap();
    let mut prior = vec![
        Iteration::read(&Block::from_message(&message))
            .unwrap()
            .unwrap(),
    ];
    note(baseline_evidence, &tip, trees[0], &f.head(), None, &message);

    let mut current = 0;
    for number in 1..=iterations as u32 {
        let reverted = number.is_multiple_of(3);
        let candidate: Vec<f64> = base
            .iter()
            .enumerate()
            .map(|(c, v)| match reverted {
                true if c == number as usize % configs => v * 1.25,
                true => *v,
                false => v * 0.9,
            })
            .collect();
        let runs = vec![
            correctness.clone(),
            RunFile::new("round-1-baseline", perf_junit(&base)),
            RunFile::new("round-1-candidate", perf_junit(&candidate)),
        ];
        let evidence = Evidence::new(&session, number, None, runs);
        let it = judged(&session, &prior, number, &evidence, &baseline_passed);
        assert_eq!(it.status == Status::Revert, reverted, "{it:?}");
        let mut block = Block::default();
        let (parent, attempt_tree) = match reverted {
            true => {
                let attempt = commit(
                    trees[1 - current],
                    &tip,
                    &format!("cutile-perf: attempt {number} on vector_add\n"),
                );
                Iteration {
                    attempt: Some(attempt.clone()),
                    ..it.clone()
                }
                .write(&mut block);
                (attempt, Some(trees[1 - current].to_string()))
            }
            false => {
                current = 1 - current;
                it.write(&mut block);
                (tip.clone(), None)
            }
        };
        let message = render_message(&format!("cutile-perf: vector_add #{number}"), None, &block);
        tip = commit(trees[current], &parent, &message);
        note(
            evidence,
            &tip,
            trees[current],
            &parent,
            attempt_tree,
            &message,
        );
        prior.push(Iteration::read(&block).unwrap().unwrap());
    }
    write_notes(&repo, &f, &notes);
    f.git(&["update-ref", &format!("refs/heads/{BRANCH}"), &tip]);
    f.git(&["checkout", "-q", BRANCH]);
    f
}

/// Iteration `number` as `step` records it from `evidence`: the tool's replay of the runs and its rules.
fn judged(
    session: &Session,
    prior: &[Iteration],
    number: u32,
    evidence: &Evidence,
    baseline_passed: &[String],
) -> Iteration {
    let (replayed, verdict) =
        audit::replayed_verdict(session, prior, number, None, evidence, baseline_passed);
    let optimization = format!("optimization {number}");
    Iteration::judged(
        number,
        optimization,
        None,
        None,
        &replayed.attempt,
        &verdict,
        0.0,
    )
}

const CORRECTNESS_CASE: &str =
    r#"<testcase classname="tests.ops.test_vector_add" name="test_op[float16]" time="0.1"/>"#;

/// A JUnit file of `cases` as pytest writes it.
fn junit(cases: &str) -> RecordFile {
    RecordFile {
        format: RecordFormat::Junit,
        text: format!(
            r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest">{cases}</testsuite></testsuites>"#
        ),
    }
}

/// A perf run's JUnit file: each config's median as TileGym's `record_property` gives it.
fn perf_junit(medians: &[f64]) -> RecordFile {
    let cases: String = medians
        .iter()
        .enumerate()
        .map(|(c, median)| {
            format!(
                r#"<testcase classname="tests.ops.test_matmul" name="test_perf[cutile-{c}-4096-bf16]" time="1.0"><properties><property name="benchmark" value="{{'cutile': {{'forward': {{'median': {median}}}}}}}"/></properties></testcase>"#
            )
        })
        .collect();
    junit(&cases)
}

/// `refs/notes/cutile-perf` holding `notes` (commit, note blob) in one level of fan-out directories, as
/// git lays out a notes tree this large.
fn write_notes(repo: &gix::Repository, f: &Fixture, notes: &[(String, gix::ObjectId)]) {
    use gix::objs::tree::{Entry, EntryKind};
    let mut by_dir: std::collections::BTreeMap<&str, Vec<Entry>> = Default::default();
    for (commit, blob) in notes {
        let (dir, rest) = commit.split_at(2);
        by_dir.entry(dir).or_default().push(Entry {
            mode: EntryKind::Blob.into(),
            filename: rest.into(),
            oid: *blob,
        });
    }
    let entries = by_dir
        .into_iter()
        .map(|(dir, mut entries)| {
            entries.sort_by(|a, b| a.filename.cmp(&b.filename));
            let tree = gix::objs::Tree { entries };
            Entry {
                mode: EntryKind::Tree.into(),
                filename: dir.into(),
                oid: repo.write_object(&tree).unwrap().detach(),
            }
        })
        .collect();
    let tree = repo
        .write_object(&gix::objs::Tree { entries })
        .unwrap()
        .detach();
    let commit = f.git(&[
        "commit-tree",
        &tree.to_string(),
        "-m",
        "Notes added by the bench",
    ]);
    f.git(&[
        "update-ref",
        git_cutile_perf::record::evidence::NOTES_REF,
        commit.trim(),
    ]);
}
