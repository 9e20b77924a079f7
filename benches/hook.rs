//! What the pre-commit hook costs a commit: prints medians, not a pass/fail (run `cargo bench --bench hook`).
//!
//! Off a session branch: `git commit --allow-empty` in a repository without a hook against the same in
//! one with ours installed (interleaved), and the hook run alone. On a session branch: the hook run alone (as git runs it: the work-tree root
//! as cwd) over 1,000 staged files, once all allowed (the commit passes) and once all outside the
//! allowed set (every path is reported). Each figure is the median of RUNS runs after WARMUP runs.

#[path = "../tests/support/mod.rs"]
mod support;

use std::fs;
use std::time::{Duration, Instant};

use support::{BIN, Fixture};

const RUNS: usize = 51;
const WARMUP: usize = 5;
const FILES: usize = 1000;
const BRANCH: &str = "cutile-perf-bench-20260101";

/// An empty repository on `main`, in the tests' sealed environment.
fn repository() -> Fixture {
    let f = Fixture::empty();
    f.git(&["init", "-q", "-b", "main"]);
    f
}

/// Runs the installed hook as git would (cwd at the root, GIT_INDEX_FILE set); returns its status.
fn run_hook(f: &Fixture) -> bool {
    f.program(".git/hooks/pre-commit", &f.root)
        .env("GIT_INDEX_FILE", ".git/index")
        .output()
        .unwrap()
        .status
        .success()
}

/// `count` committed files under `dir`, then each modified and staged.
fn stage_changes(f: &Fixture, dir: &str, count: usize) -> Vec<String> {
    let paths: Vec<String> = (0..count).map(|i| format!("{dir}/{i}.py")).collect();
    for path in &paths {
        f.write(path, "v = 1\n");
    }
    f.git(&["add", "-A"]);
    // setup, not the case measured: past any hook
    f.git(&["commit", "-q", "--no-verify", "-m", "files"]);
    for path in &paths {
        fs::write(f.path(path), "v = 2\n").unwrap();
    }
    f.git(&["add", "-A"]);
    paths
}

/// Median, 10th and 90th percentile of `RUNS` timed runs of `f`, after `WARMUP` untimed ones.
fn measure(mut f: impl FnMut()) -> [Duration; 3] {
    for _ in 0..WARMUP {
        f();
    }
    summary(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect(),
    )
}

fn summary(mut times: Vec<Duration>) -> [Duration; 3] {
    times.sort();
    let n = times.len();
    [times[n / 2], times[n / 10], times[n * 9 / 10]]
}

fn report(what: &str, [median, p10, p90]: [Duration; 3]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what:<62} median {:7.2} ms   (p10 {:6.2}, p90 {:6.2})",
        ms(median),
        ms(p10),
        ms(p90)
    );
}

fn main() {
    println!(
        "{RUNS} runs each after {WARMUP} warm-up runs; binary {}\n",
        BIN.display()
    );

    // off a session branch: two identical repositories, one with the hook, committed to in turn so
    // that drift in the machine's load affects both alike
    let plain = repository();
    let hooked = repository();
    for repo in [&plain, &hooked] {
        stage_changes(repo, "src", 10);
        repo.git(&["commit", "-q", "-m", "base"]);
    }
    hooked.ok(&["hook", "install"]);
    let commit = |repo: &Fixture| repo.git(&["commit", "-q", "--allow-empty", "-m", "x"]);
    let mut without = Vec::new();
    let mut with = Vec::new();
    for run in 0..WARMUP + RUNS {
        for (repo, times) in [(&plain, &mut without), (&hooked, &mut with)] {
            let start = Instant::now();
            commit(repo);
            if run >= WARMUP {
                times.push(start.elapsed());
            }
        }
    }
    let (without, with) = (summary(without), summary(with));
    report("off a session branch: git commit, no hook", without);
    report("off a session branch: git commit, with the hook", with);
    println!(
        "{:<62} median {:7.2} ms",
        "off a session branch: difference of the commit medians",
        (with[0].as_secs_f64() - without[0].as_secs_f64()) * 1000.0
    );
    report(
        "off a session branch: the hook alone",
        measure(|| assert!(run_hook(&hooked))),
    );

    // on a session branch, 1,000 staged files; `session` installs the hook
    let allowed = repository();
    let paths: Vec<String> = (0..FILES).map(|i| format!("k/{i}.py")).collect();
    allowed.session(
        BRANCH,
        &paths.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    stage_changes(&allowed, "k", FILES);
    report(
        &format!("session branch: the hook alone, {FILES} staged files, all allowed"),
        measure(|| assert!(run_hook(&allowed))),
    );

    let refused = repository();
    refused.session(BRANCH, &["k/0.py"]);
    stage_changes(&refused, "tests", FILES);
    report(
        &format!("session branch: the hook alone, {FILES} staged files, all refused"),
        measure(|| assert!(!run_hook(&refused))),
    );
}
