//! The sessions run on a real GPU (`tests/data/h200-sessions/<kernel>/`) checked against their raw JUnit files:
//! every config value in the trailers is the JUnit record's median, every iteration's latency is the
//! geometric mean of those, and the committed table, plot and report are what the trailers render to.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use git_cutile_perf::features::report::{self, Material};
use git_cutile_perf::record::plot;
use git_cutile_perf::record::session::{Iteration, Session, fmt_ms};
use git_cutile_perf::record::table;
use git_cutile_perf::rules::decision::Status;
use git_cutile_perf::rules::records::{
    Measurement, RecordFormat, Statistic, measurements, round_config_ms,
};
use git_cutile_perf::rules::stats::geometric_mean;
use git_cutile_perf::rules::trailers::Block;

/// The commit messages in `git log --format='commit %H%n%B'` output, newest first.
fn messages(log: &str) -> Vec<String> {
    let mut messages: Vec<String> = Vec::new();
    for line in log.lines() {
        let is_header = line
            .strip_prefix("commit ")
            .is_some_and(|id| id.len() == 40 && id.chars().all(|c| c.is_ascii_hexdigit()));
        if is_header {
            messages.push(String::new());
        } else if let Some(message) = messages.last_mut() {
            message.push_str(line);
            message.push('\n');
        }
    }
    messages
}

/// Each real session with its raw JUnit files: its kernel, its directory and its `git-log.txt`.
fn examples() -> Vec<(&'static str, PathBuf, String)> {
    sessions(&["rms_norm", "matmul"])
}

/// The sessions in `tests/data/h200-sessions/<kernel>/`, each with its directory and its `git-log.txt`.
fn sessions(kernels: &[&'static str]) -> Vec<(&'static str, PathBuf, String)> {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h200-sessions");
    kernels
        .iter()
        .copied()
        .map(|kernel| {
            let dir = examples.join(kernel);
            let log = std::fs::read_to_string(dir.join("git-log.txt")).unwrap();
            (kernel, dir, log)
        })
        .collect()
}

/// The iterations in the log, oldest first.
fn iterations(log: &str) -> Vec<Iteration> {
    let mut found: Vec<Iteration> = messages(log)
        .iter()
        .filter_map(|m| Iteration::read(&Block::from_message(m)).unwrap())
        .collect();
    found.reverse();
    found
}

#[test]
fn trailers_and_tables_match_the_raw_junit_files() {
    for (kernel, dir, log) in examples() {
        let found = iterations(&log);
        assert!(
            found.len() >= 5,
            "{kernel}: a baseline and at least four attempts"
        );
        for it in &found {
            let junit = dir.join(format!("junit/iteration-{}.xml", it.number));
            if it.status == Status::Crash {
                assert!(
                    it.latency_ms.is_none() && !junit.exists(),
                    "{kernel} #{}",
                    it.number
                );
                continue;
            }
            let xml = std::fs::read_to_string(&junit).unwrap();
            // the trailers hold the statistic; the records' means stay in the evidence
            let measured: Vec<Measurement> =
                measurements(&RecordFormat::Junit.parse(&xml).unwrap(), Statistic::Median)
                    .unwrap()
                    .into_iter()
                    .map(|m| Measurement { mean: None, ..m })
                    .collect();
            // each value as the trailers round it (these were written whole)
            let rounded = |configs: &[Measurement]| -> Vec<Measurement> {
                configs
                    .iter()
                    .map(|m| Measurement {
                        value: round_config_ms(m.value),
                        ..m.clone()
                    })
                    .collect()
            };
            assert_eq!(
                rounded(&measured),
                rounded(&it.configs),
                "{kernel} #{}",
                it.number
            );
            let latency = geometric_mean(measured.iter().map(|m| m.value));
            assert_eq!(
                fmt_ms(latency),
                fmt_ms(it.latency_ms),
                "{kernel} #{}",
                it.number
            );
        }
        assert_committed(&dir.join("perf_results.md"), &table::markdown(&found));
        for status in [Status::Keep, Status::Revert, Status::Crash] {
            assert!(
                found.iter().skip(1).any(|it| it.status == status),
                "{kernel} has no {status}"
            );
        }
    }
}

fn session(log: &str) -> Session {
    messages(log)
        .iter()
        .find_map(|m| Session::read(&Block::from_message(m)).unwrap())
        .unwrap()
}

/// `generated` is what `path` holds; `UPDATE_GENERATED=1` writes it there.
fn assert_committed(path: &Path, generated: &str) {
    if std::env::var_os("UPDATE_GENERATED").is_some() {
        std::fs::write(path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is not what the trailers render to; regenerate with UPDATE_GENERATED=1 cargo test --test tests real_sessions::",
        path.display()
    );
}

/// The committed plots are what the trailers draw to; `UPDATE_GENERATED=1` redraws them.
#[test]
fn plots_are_drawn_from_the_trailers() {
    for (_, dir, log) in examples() {
        let session = session(&log);
        let svg = plot::svg(
            &plot::title(&session),
            &iterations(&log),
            &BTreeMap::new(),
            session.thresholds.regression_pct,
        )
        .unwrap();
        assert_committed(&dir.join("perf_results.svg"), &svg);
    }
}

/// Each H200 session's report, committed beside its log: rendered from the trailers alone (the
/// examples kept the log, not the repository with its notes and attempts), saying so.
#[test]
fn reports_are_rendered_from_the_trailers() {
    for (kernel, dir, log) in sessions(&["rms_norm", "matmul", "rope"]) {
        let material = Material::from_trailers(
            session(&log),
            iterations(&log),
            vec![
                "the evidence notes: this example kept the session's log (git-log.txt), not its repository, so \
                 there are no intervals, GPU states or compile facts here"
                    .to_string(),
            ],
        );
        let page = report::html(&material).unwrap();
        assert_eq!(page, report::html(&material).unwrap(), "{kernel}");
        for it in iterations(&log) {
            assert!(
                page.contains(&format!("<article id=\"iteration-{}\"", it.number)),
                "{kernel} #{}",
                it.number
            );
        }
        assert!(page.contains("What this page lacks"), "{kernel}");
        assert_committed(&dir.join("perf_results.html"), &page);
    }
}
