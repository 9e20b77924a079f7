//! What the pre-commit hook costs a commit: prints medians, not a pass/fail (run `cargo bench --bench hook`).
//!
//! Off a session branch: `git commit --allow-empty` in a repository without a hook against the same in
//! one with ours installed (interleaved), and the hook run alone. On a session branch: the hook run alone (as git runs it: the work-tree root
//! as cwd) over 1,000 staged files, once all allowed (the commit passes) and once all outside the
//! allowed set (every path is reported). Each figure is the median of RUNS runs after WARMUP runs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "../tests/support/baseline.rs"]
mod baseline;
use baseline::baseline_message;

const EXE: &str = env!("CARGO_BIN_EXE_git-cutile-perf");
const RUNS: usize = 51;
const WARMUP: usize = 5;
const FILES: usize = 1000;

struct Repo {
    root: PathBuf,
    home: PathBuf,
    path: String,
}

impl Repo {
    fn new(root: PathBuf) -> Repo {
        let home = root.with_extension("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        fs::write(home.join(".gitconfig"), "").unwrap();
        let path = format!(
            "{}:{}",
            Path::new(EXE).parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let repo = Repo { root, home, path };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.root)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@localhost")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@localhost");
        cmd
    }

    fn git(&self, args: &[&str]) {
        let out = self.command("git").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs the installed hook as git would (cwd at the root, GIT_INDEX_FILE set); returns its status.
    fn run_hook(&self) -> bool {
        self.command(".git/hooks/pre-commit")
            .env("GIT_INDEX_FILE", ".git/index")
            .output()
            .unwrap()
            .status
            .success()
    }

    /// A session branch whose baseline commit allows `allowed`, as `start` records it.
    fn session(&self, allowed: &[String]) {
        self.git(&["checkout", "-q", "-b", "cutile-perf-bench-20260101"]);
        let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
        let message = baseline_message("k/0.py", "tests/test_k.py", &allowed);
        self.git(&[
            "commit",
            "-q",
            "--allow-empty",
            "--cleanup=verbatim",
            "-m",
            &message,
        ]);
    }

    /// `count` committed files under `dir`, then each modified and staged.
    fn stage_changes(&self, dir: &str, count: usize) -> Vec<String> {
        let paths: Vec<String> = (0..count).map(|i| format!("{dir}/{i}.py")).collect();
        fs::create_dir_all(self.root.join(dir)).unwrap();
        for path in &paths {
            fs::write(self.root.join(path), "v = 1\n").unwrap();
        }
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "files"]);
        for path in &paths {
            fs::write(self.root.join(path), "v = 2\n").unwrap();
        }
        self.git(&["add", "-A"]);
        paths
    }
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
    let temp = tempfile::tempdir().unwrap();
    println!("{RUNS} runs each after {WARMUP} warm-up runs; binary {EXE}\n");

    // off a session branch: two identical repositories, one with the hook, committed to in turn so
    // that drift in the machine's load affects both alike
    let plain = Repo::new(temp.path().join("plain"));
    let hooked = Repo::new(temp.path().join("hooked"));
    for repo in [&plain, &hooked] {
        repo.stage_changes("src", 10);
        repo.git(&["commit", "-q", "-m", "base"]);
    }
    assert!(
        hooked
            .command(EXE)
            .args(["hook", "install"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let commit = |repo: &Repo| repo.git(&["commit", "-q", "--allow-empty", "-m", "x"]);
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
        measure(|| assert!(hooked.run_hook())),
    );

    // on a session branch, 1,000 staged files
    let allowed = Repo::new(temp.path().join("allowed"));
    let paths: Vec<String> = (0..FILES).map(|i| format!("k/{i}.py")).collect();
    allowed.session(&paths);
    allowed.stage_changes("k", FILES);
    allowed
        .command(EXE)
        .args(["hook", "install"])
        .output()
        .unwrap();
    report(
        &format!("session branch: the hook alone, {FILES} staged files, all allowed"),
        measure(|| assert!(allowed.run_hook())),
    );

    let refused = Repo::new(temp.path().join("refused"));
    refused.session(&["k/0.py".to_string()]);
    refused.stage_changes("tests", FILES);
    refused
        .command(EXE)
        .args(["hook", "install"])
        .output()
        .unwrap();
    report(
        &format!("session branch: the hook alone, {FILES} staged files, all refused"),
        measure(|| assert!(!refused.run_hook())),
    );
}
