//! The integration-test harness: a fresh TileGym-shaped repository per test (a copy of
//! `fixtures/tilegym/` committed with real git), the real binary, and a sealed git environment so the
//! developer's own git config cannot change the results.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub const KERNEL: &str = "src/tilegym/ops/cutile/vector_add.py";
pub const BIN: &str = env!("CARGO_BIN_EXE_git-cutile-perf");

pub struct Fixture {
    pub dir: tempfile::TempDir,
    home: tempfile::TempDir,
}

impl Fixture {
    /// A committed copy of the fixture repository on branch `main`.
    pub fn new() -> Fixture {
        let fixture = Fixture::empty();
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tilegym"),
            fixture.root(),
        );
        fixture.git(&["init", "-q", "-b", "main"]);
        fixture.git(&["add", "-A"]);
        fixture.git(&["commit", "-q", "-m", "fixture"]);
        fixture
    }

    /// An empty directory with a sealed home.
    pub fn empty() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(".gitconfig"),
            "[user]\n\tname = Test\n\temail = test@localhost\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            home,
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    fn seal(&self, cmd: &mut Command) {
        let global = self.home.path().join(".gitconfig");
        cmd.env("HOME", self.home.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", global)
            .env("NO_COLOR", "1")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE");
    }

    /// Runs git in the repository; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.args(args).current_dir(self.root());
        self.seal(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The tool as a command, to add env or change directory before running.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args).current_dir(self.root());
        self.seal(&mut cmd);
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![bin_dir.to_path_buf()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs the tool and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "{args:?} failed:\nstdout: {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Runs the tool and asserts failure; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "{args:?} should fail:\nstdout: {}",
            text(&out.stdout)
        );
        text(&out.stderr)
    }

    /// Runs `step ... --json` and parses its object.
    pub fn step_json(&self, args: &[&str]) -> serde_json::Value {
        let mut full = vec!["step", "--json"];
        full.extend_from_slice(args);
        serde_json::from_str(&self.ok(&full)).unwrap()
    }

    pub fn start(&self) -> String {
        self.ok(&["start", "vector_add"])
    }

    /// Replaces text in the kernel file: a simulated optimization.
    pub fn edit_kernel(&self, from: &str, to: &str) {
        self.edit(KERNEL, from, to);
    }

    pub fn edit(&self, rel: &str, from: &str, to: &str) {
        let path = self.path(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{rel} lacks {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
    }

    /// Sets both simulated latencies (ms).
    pub fn set_latency(&self, small: f64, large: f64) {
        let path = self.path(KERNEL);
        let text = std::fs::read_to_string(&path).unwrap();
        let start = text.find("LATENCY_MS = {").unwrap();
        let end = start + text[start..].find('}').unwrap() + 1;
        let line = format!("LATENCY_MS = {{\"small\": {small:.6}, \"large\": {large:.6}}}");
        std::fs::write(&path, format!("{}{line}{}", &text[..start], &text[end..])).unwrap();
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    pub fn branch(&self) -> String {
        self.git(&["branch", "--show-current"]).trim().to_string()
    }

    /// `git status --porcelain` of the work tree.
    pub fn status(&self) -> String {
        self.git(&["status", "--porcelain"])
    }

    /// One trailer of HEAD as git reads it.
    pub fn trailer(&self, rev: &str, key: &str) -> String {
        self.git(&[
            "log",
            "-1",
            &format!("--format=%(trailers:key={key},valueonly,separator=%x1f)"),
            rev,
        ])
        .trim_end()
        .to_string()
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() == "__pycache__" {
                continue;
            }
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
