//! The integration-test harness, shared by the tests (`mod support;`) and the benchmarks (which include
//! it by path), and no part of the tool's library: a fresh TileGym-shaped repository per test (a copy of
//! `fixtures/tilegym/` committed with real git, in a directory whose name has a space), the real binary,
//! and a sealed environment (no inherited variables, no system or user git config, a fixed identity
//! and date) so the developer's own setup cannot change the results.

// the tests and each benchmark use a part of the harness
#![allow(dead_code)]

pub mod hang;
pub mod standin;

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use git_cutile_perf::record::session::{Iteration, Session, fmt_change, fmt_ms};
use git_cutile_perf::rules::decision::Thresholds;
use git_cutile_perf::rules::records::{Measurement, Statistic};
use git_cutile_perf::rules::trailers::{Block, render_message};

pub const KERNEL: &str = "src/tilegym/ops/cutile/vector_add.py";
pub const TEST: &str = "tests/ops/test_vector_add.py";
/// The tool's binary that cargo built beside the running test or benchmark (`target/<profile>/deps/x`
/// runs, `target/<profile>/git-cutile-perf` is the tool).
pub static BIN: LazyLock<PathBuf> = LazyLock::new(|| {
    let exe = std::env::current_exe().expect("the running test's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("tests run from target/<profile>/deps");
    profile_dir.join("git-cutile-perf")
});

/// PATH for every command the harness runs: this test's binary first, so hooks find `git-cutile-perf`;
/// then, when `python3` lacks pytest, the private environment the demo makes (made once per test binary,
/// as the demo makes it), so that the README's `cargo test` passes on a machine with a bare Python; then the
/// inherited PATH. Tests that run the library in-process put it on their own PATH.
pub static SEARCH_PATH: LazyLock<String> = LazyLock::new(|| {
    let mut dirs = vec![BIN.parent().unwrap().to_path_buf()];
    dirs.extend(python_with_pytest());
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    dirs.extend(std::env::split_paths(&inherited));
    std::env::join_paths(dirs).unwrap().into_string().unwrap()
});

/// The cache directory (`XDG_CACHE_HOME`) of every fixture of this test binary, beside the binary so it
/// outlives the run. (The tests' Python bytecode is not kept there: each test process compiles its own,
/// in a directory of its own.)
static SHARED_CACHE: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = BIN.parent().unwrap().join("cutile-perf-test-cache");
    fs::create_dir_all(&dir).unwrap();
    dir
});

/// The demo's environment's `bin`, when `python3` has no pytest. Test binaries may run at once (nextest),
/// so the making is done under a lock beside the environment.
fn python_with_pytest() -> Option<PathBuf> {
    if git_cutile_perf::features::demo_python::has_pytest(&["python3"]) {
        return None;
    }
    let cache =
        git_cutile_perf::system::process::cache_dir().expect("HOME or XDG_CACHE_HOME is set");
    fs::create_dir_all(cache.join("git-cutile-perf")).unwrap();
    let lock = fs::File::create(cache.join("git-cutile-perf/venv.lock")).unwrap();
    lock.lock().unwrap();
    git_cutile_perf::features::demo_python::for_demo("python3", &Captured::default().progress())
        .unwrap_or_else(|err| panic!("the tests need pytest: {err:#}"))
}

/// Every `.rs` file under `src/`: its path there (`/`-separated) and its text.
pub fn source_files() -> Vec<(String, String)> {
    fn read(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                read(root, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push((
                    relative.replace('\\', "/"),
                    fs::read_to_string(&path).unwrap(),
                ));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    read(&root, &root, &mut sources);
    sources
}

/// Every file git tracks in this repository, by its path (`git ls-files`).
pub fn tracked_files() -> Vec<String> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("git ls-files");
    assert!(out.status.success(), "git ls-files failed");
    String::from_utf8(out.stdout)
        .unwrap()
        .split('\0')
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect()
}

/// A source file's text without its unit tests.
pub fn production(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text)
}

/// A progress sink in memory: what a verb run in-process said there, for the test to read.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// A sink that writes here.
    pub fn progress(&self) -> git_cutile_perf::system::ui::Progress {
        git_cutile_perf::system::ui::Progress::to(self.clone())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// This process's environment, for a test that runs the library in-process (the verbs read PATH, HOME and
/// git's variables from it): held by one such test at a time, every variable it sets put back when it
/// ends. The tool's runs started by [`Fixture::program`] get a sealed environment of their own, so the
/// other tests do not see it.
pub struct ProcessEnvironment {
    saved: std::cell::RefCell<Vec<(OsString, Option<OsString>)>>,
    _held: MutexGuard<'static, ()>,
}

impl ProcessEnvironment {
    pub fn hold() -> ProcessEnvironment {
        static HELD: Mutex<()> = Mutex::new(());
        ProcessEnvironment {
            saved: Default::default(),
            _held: HELD.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    pub fn set(&self, name: impl AsRef<std::ffi::OsStr>, value: impl AsRef<std::ffi::OsStr>) {
        let name = name.as_ref();
        let mut saved = self.saved.borrow_mut();
        if !saved.iter().any(|(held, _)| held == name) {
            saved.push((name.to_os_string(), std::env::var_os(name)));
        }
        // SAFETY: this binary reads its environment only through std (Command, gix, tempfile), which
        // locks it; nothing here calls the C library's getenv
        unsafe { std::env::set_var(name, value) };
    }

    pub fn set_path(&self, dirs: impl IntoIterator<Item = PathBuf>) {
        self.set("PATH", std::env::join_paths(dirs).unwrap());
    }
}

impl Drop for ProcessEnvironment {
    fn drop(&mut self) {
        for (name, value) in self.saved.take() {
            // SAFETY: as in `set`
            match value {
                Some(value) => unsafe { std::env::set_var(name, value) },
                None => unsafe { std::env::remove_var(name) },
            }
        }
    }
}

pub struct Fixture {
    _temp: tempfile::TempDir,
    /// The work-tree root.
    pub root: PathBuf,
    home: PathBuf,
    /// PATH for every command: this test's binary first, so hooks find `git-cutile-perf`.
    search_path: String,
    /// Whether `start` runs as on a GPU machine: off, it gets `--no-gpu` (the fixture runs on the CPU).
    gpu: bool,
}

impl Fixture {
    /// The fixture repository committed on `main`.
    pub fn new() -> Fixture {
        let fixture = Fixture::empty();
        fixture.commit_fixture();
        fixture
    }

    fn commit_fixture(&self) {
        copy_dir(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tilegym"),
            &self.root,
        );
        self.git(&["init", "-q", "-b", "main"]);
        // an identity in the repository itself, for the tests that run the library in-process
        self.git(&["config", "user.name", "Test Author"]);
        self.git(&["config", "user.email", "author@example.com"]);
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", "fixture"]);
    }

    /// An empty directory (no repository) with a sealed home.
    pub fn empty() -> Fixture {
        Fixture::empty_in(&std::env::temp_dir())
    }

    /// The fixture repository committed on `main`, in a new directory under `parent`.
    pub fn new_in(parent: &Path) -> Fixture {
        let fixture = Fixture::empty_in(parent);
        fixture.commit_fixture();
        fixture
    }

    fn empty_in(parent: &Path) -> Fixture {
        let temp = tempfile::tempdir_in(parent).unwrap();
        let root = temp.path().join("tile gym");
        let home = temp.path().join("home");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&home).unwrap();
        fs::write(home.join(".gitconfig"), "").unwrap();
        Fixture {
            _temp: temp,
            root,
            home,
            search_path: SEARCH_PATH.clone(),
            gpu: false,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The sealed environment: every variable a command of the harness gets, and no other.
    pub fn environment(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        vec![
            ("PATH", self.search_path.clone().into()),
            ("HOME", self.home.clone().into()),
            ("XDG_CACHE_HOME", SHARED_CACHE.clone().into()),
            ("GIT_CONFIG_NOSYSTEM", "1".into()),
            ("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig").into()),
            ("GIT_AUTHOR_NAME", "Test Author".into()),
            ("GIT_AUTHOR_EMAIL", "author@example.com".into()),
            ("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z".into()),
            ("GIT_COMMITTER_NAME", "Test Committer".into()),
            ("GIT_COMMITTER_EMAIL", "committer@example.com".into()),
            ("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z".into()),
            ("NO_COLOR", "1".into()),
            // the start-ups of a machine with few CPUs, whatever this one has: how many workers a step
            // starts, and when, is then the same on every machine (a test of the others sets its own)
            ("CUTILE_PERF_STAND_BY_FROM_ROUND", "1".into()),
            ("CUTILE_PERF_STAND_BY_ROUNDS", "1".into()),
            ("CUTILE_PERF_STAND_BY_AT_ONCE", "0".into()),
            ("CUTILE_PERF_SPARES", "0".into()),
        ]
    }

    /// `program` in `dir`, in the sealed environment.
    pub fn program(&self, program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(dir).env_clear().envs(self.environment());
        cmd
    }

    pub fn run_in(&self, dir: &Path, program: &str, args: &[&str]) -> Output {
        self.program(program, dir).args(args).output().unwrap()
    }

    /// git at the root; panics with its output if it fails; returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self.run_in(&self.root, "git", args);
        assert!(out.status.success(), "git {args:?} failed:\n{}", both(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// The tool as a command at the root, to add env or change directory before running. `start`
    /// gets `--no-gpu` unless the test gave this fixture a GPU ([`Fixture::fake_gpu`]).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.program(&*BIN, &self.root);
        cmd.args(args);
        if args.first() == Some(&"start") && !self.gpu && !args.contains(&"--no-gpu") {
            cmd.arg("--no-gpu");
        }
        cmd
    }

    /// An `nvidia-smi` first on PATH that reports `gpu` (its `gpu::QUERY` line, e.g. `NVIDIA H200, 9.0,
    /// 580.1, 1980, 1980, 612, 143771, 41`) or fails like a machine without a driver (`None`); `start`
    /// then runs as on a GPU machine. [`Fixture::gpu_processes`] sets who else uses it.
    pub fn fake_gpu(&mut self, gpu: Option<&str>) {
        let dir = self.home.join("gpu-bin");
        fs::create_dir_all(&dir).unwrap();
        // a warm worker is listed once its pytest has written its pid (as it starts), as a real GPU
        // lists a process once it made a context: a worker still importing, standing by for a later
        // round, has none
        let script = match gpu {
            Some(_) => {
                "#!/bin/sh\ndir=$(dirname \"$0\")\ncase \"$1\" in\n  --query-gpu=*) cat \"$dir/gpu.csv\" ;;\n  --query-compute-apps=*) cat \"$dir/apps.csv\"\n    if [ -f \"$dir/workers\" ]; then w=$(cat \"$dir/workers\"); for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" in *\"$w\"*) c=$(tr '\\0' '\\n' < $p/cmdline 2>/dev/null | sed -n 's/^--cutile-perf-worker=//p'); if [ -z \"$c\" ] || [ -f \"$c/pid\" ]; then echo \"${p#/proc/}, python3, 512\"; fi ;; esac; done; fi ;;\n  *) exit 2 ;;\nesac\n"
            }
            None => {
                "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n"
            }
        };
        fs::write(dir.join("gpu.csv"), format!("{}\n", gpu.unwrap_or(""))).unwrap();
        fs::write(dir.join("apps.csv"), "").unwrap();
        let smi = dir.join("nvidia-smi");
        fs::write(&smi, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&smi, fs::Permissions::from_mode(0o755)).unwrap();
        if !self.gpu {
            self.first_on_path(&dir);
        }
        self.gpu = true;
    }

    /// `dir`'s programs found first by every command (stand-ins for the toolkit's, say).
    pub fn first_on_path(&mut self, dir: &Path) {
        self.search_path = format!("{}:{}", dir.display(), self.search_path);
    }

    /// The fake `nvidia-smi` lists every worker of this fixture as using the GPU too, as a real one lists
    /// a warm worker's CUDA context.
    pub fn gpu_lists_workers(&self) {
        let channel = format!("--cutile-perf-worker={}", self.root.display());
        fs::write(self.home.join("gpu-bin/workers"), channel).unwrap();
    }

    /// The processes the fake `nvidia-smi` lists as using the GPU (`pid, name, MiB` lines).
    pub fn gpu_processes(&self, lines: &str) {
        fs::write(self.home.join("gpu-bin/apps.csv"), lines).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs the tool and asserts success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?} failed:\n{}", both(&out));
        text(&out.stdout)
    }

    /// Runs the tool and asserts success; returns stdout and stderr (where progress and reports go).
    pub fn ok_all(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "{args:?} failed:\n{}", both(&out));
        both(&out)
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
        // a step names its letter; `none` where the test is about something else
        if !args.contains(&"--opt") {
            full.extend(["--opt", "none"]);
        }
        full.extend_from_slice(args);
        serde_json::from_str(&self.ok(&full)).unwrap()
    }

    /// Checks that the baseline recorded the session perf file `perf_file` (its hash in the last commit's
    /// trailers), that a comment-only edit of `kernel` steps as no change, and that `verify` names the file.
    pub fn perf_file_session_holds(&self, perf_file: &str, kernel: &str) {
        let hash = self.git(&["hash-object", perf_file]);
        assert_eq!(self.trailer("HEAD", "Cutile-Perf-Test-Hash"), hash.trim());
        // a comment alone compiles to the same kernel: no change, measured through the perf file
        self.append(kernel, "# a comment\n");
        let step = self.step_json(&["a comment only"]);
        assert_eq!(step["status"], "revert", "{step}");
        assert!(
            step["reason"].as_str().unwrap().contains("no change"),
            "{step}"
        );
        let verified = self.ok(&["verify"]);
        let wanted = format!("the session perf file the baseline measured: {perf_file}@");
        assert!(verified.contains(&wanted), "{verified}");
    }

    /// A session started by the real `start` (which installs the hook), allowing only the kernel; its
    /// output. On the unchanged fixture this is a copy of the one session `start` made on it in this
    /// test binary ([`STARTED`]): the same bytes `start` would write here, without its pytest runs.
    pub fn start(&self) -> String {
        if self.gpu || self.search_path != *SEARCH_PATH || self.state() != PRISTINE.state {
            return self.ok(&["start", "vector_add"]);
        }
        fs::remove_dir_all(&self.root).unwrap();
        copy_dir(&STARTED.fixture.root, &self.root);
        STARTED.output.clone()
    }

    /// What `start` reads of this fixture besides its files' contents: refs and HEAD, every path git
    /// sees (ignored ones too), the repository's config, hooks and excludes, and the home.
    fn state(&self) -> Vec<String> {
        let listing = |dir: &Path| -> String {
            let mut names: Vec<String> = fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names.join("\n")
        };
        let read = |path: PathBuf| fs::read_to_string(path).unwrap_or_default();
        vec![
            self.git(&["for-each-ref", "--format=%(refname) %(objectname)"]),
            self.git(&["rev-parse", "--symbolic-full-name", "HEAD"]),
            self.git(&[
                "status",
                "--porcelain",
                "--ignored",
                "--untracked-files=all",
            ]),
            read(self.root.join(".git/config")),
            read(self.root.join(".git/info/exclude")),
            listing(&self.hooks()),
            listing(&self.home),
            read(self.home.join(".gitconfig")),
        ]
    }

    /// A session allowing `allowed`, written as `start` writes it but without running the tests; then
    /// the hook is installed.
    pub fn session(&self, branch: &str, allowed: &[&str]) {
        self.git(&["checkout", "-q", "-b", branch]);
        let message = baseline_message(KERNEL, TEST, allowed);
        self.git(&[
            "commit",
            "-q",
            "--allow-empty",
            "--cleanup=verbatim",
            "-m",
            &message,
        ]);
        self.ok(&["hook", "install"]);
    }

    /// Replaces text in the kernel file: a simulated optimization.
    pub fn edit_kernel(&self, from: &str, to: &str) {
        self.edit(KERNEL, from, to);
    }

    pub fn edit(&self, rel: &str, from: &str, to: &str) {
        let path = self.path(rel);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{rel} lacks {from:?}");
        fs::write(&path, text.replacen(from, to, 1)).unwrap();
    }

    pub fn write(&self, rel: &str, contents: &str) {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    pub fn append(&self, rel: &str, line: &str) {
        let mut contents = fs::read_to_string(self.path(rel)).unwrap();
        contents.push_str(line);
        self.write(rel, &contents);
    }

    /// Sets both simulated latencies (ms).
    pub fn set_latency(&self, small: f64, large: f64) {
        let path = self.path(KERNEL);
        let text = fs::read_to_string(&path).unwrap();
        let start = text.find("LATENCY_MS = {").unwrap();
        let end = start + text[start..].find('}').unwrap() + 1;
        let line = format!("LATENCY_MS = {{\"small\": {small:.6}, \"large\": {large:.6}}}");
        fs::write(&path, format!("{}{line}{}", &text[..start], &text[end..])).unwrap();
    }

    /// `git commit` of what is staged, from `dir`.
    pub fn commit_in(&self, dir: &Path, extra: &[&str]) -> Output {
        let mut args = vec!["commit", "-q", "-m", "change"];
        args.extend_from_slice(extra);
        self.run_in(dir, "git", &args)
    }

    pub fn commit(&self) -> Output {
        self.commit_in(&self.root, &[])
    }

    /// [`Fixture::commit_in`] as the tool commits: with the nonce its hooks take for the tool's own.
    pub fn tool_commit_in(&self, dir: &Path, extra: &[&str]) -> Output {
        const NONCE: &str = "0123456789abcdef";
        fs::write(self.root.join(".git/cutile-perf-commit-nonce"), NONCE).unwrap();
        let mut args = vec!["commit", "-q", "-m", "change"];
        args.extend_from_slice(extra);
        let out = self
            .program("git", dir)
            .env("GIT_CUTILE_PERF_NONCE", NONCE)
            .args(args)
            .output()
            .unwrap();
        fs::remove_file(self.root.join(".git/cutile-perf-commit-nonce")).unwrap();
        out
    }

    pub fn tool_commit(&self) -> Output {
        self.tool_commit_in(&self.root, &[])
    }

    pub fn hooks(&self) -> PathBuf {
        self.root.join(".git/hooks")
    }

    /// The branch `start` created (its name carries today's date).
    pub fn session_branch(&self) -> String {
        self.git(&[
            "branch",
            "--list",
            "cutile-perf-*",
            "--format=%(refname:short)",
        ])
        .trim()
        .to_string()
    }

    /// Takes this test's binary off PATH, leaving python, pytest and git.
    pub fn hide_tool(&mut self) {
        let bin_dir = BIN.parent().unwrap();
        let kept: Vec<PathBuf> = std::env::split_paths(&*SEARCH_PATH)
            .filter(|dir| !dir.join("git-cutile-perf").exists() && dir != bin_dir)
            .collect();
        self.search_path = std::env::join_paths(kept).unwrap().into_string().unwrap();
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

    /// The iteration HEAD records is the replay of its evidence note (`replay::attempt`, the one
    /// derivation `step` records from and `verify` recomputes): status, correctness, decision, the whole
    /// reason (a confirmation's remark too), latency, change, configs and rounds.
    pub fn replays_as_recorded(&self) {
        use git_cutile_perf::record::evidence::Evidence;
        use git_cutile_perf::record::history::{Configs, read};
        let repo = git_cutile_perf::system::git::Repo::discover(&self.root).unwrap();
        let history = read(&repo, Configs::All).unwrap().expect("a session");
        let iterations: Vec<Iteration> = history.iterations().cloned().collect();
        let (it, prior) = iterations.split_last().expect("an iteration");
        let evidence = |commit: &str| Evidence::of(&repo, commit).unwrap().expect("evidence");
        let (head, _) = history.iterations.last().unwrap();
        let baseline_passed = evidence(&history.baseline_commit).passed_cases().unwrap();
        let (replayed, verdict) = git_cutile_perf::record::audit::replayed_verdict(
            &history.session,
            prior,
            it.number,
            it.cause,
            &evidence(head),
            &baseline_passed,
        );
        let attempt = &replayed.attempt;
        let remark = replayed
            .remark
            .map(|r| format!("; {r}"))
            .unwrap_or_default();
        // each config's value as the trailers round it
        let rounded = |configs: &[git_cutile_perf::rules::records::Measurement]| {
            let mut configs = configs.to_vec();
            for config in &mut configs {
                config.value = git_cutile_perf::rules::records::round_config_ms(config.value);
            }
            configs
        };
        let configs = match attempt {
            git_cutile_perf::rules::decision::Attempt::Measured {
                configs, paired, ..
            } => Some((rounded(configs), paired.estimate.rounds as u32)),
            _ => None,
        };
        let comparison = attempt.comparison();
        assert_eq!(
            (
                it.status,
                it.correctness,
                it.decision,
                it.reason.clone(),
                fmt_ms(it.latency_ms),
                fmt_change(it.change_pct),
                (!it.configs.is_empty())
                    .then(|| rounded(&it.configs))
                    .zip(it.rounds),
            ),
            (
                verdict.status,
                attempt.correctness(),
                verdict.decision,
                verdict.reason + &remark,
                fmt_ms(comparison.map(|c| c.latency_ms)),
                fmt_change(comparison.map(|c| c.change_pct())),
                configs,
            ),
            "iteration {} as recorded and as its evidence replays",
            it.number
        );
    }

    /// One trailer of a commit as git reads it (several values joined by U+001F).
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

/// A fresh fixture's [`Fixture::state`], to tell an unchanged fixture.
struct Pristine {
    state: Vec<String>,
}

static PRISTINE: LazyLock<Pristine> = LazyLock::new(|| Pristine {
    state: Fixture::new().state(),
});

/// The session the real `start` made on the unchanged fixture, once per test binary, and what it printed.
struct Started {
    fixture: Fixture,
    output: String,
}

static STARTED: LazyLock<Started> = LazyLock::new(|| {
    let fixture = Fixture::new();
    let output = fixture.ok(&["start", "vector_add"]);
    // the baseline's worker it kept would outlive the test binary (the copies cannot reuse it)
    fixture.ok(&["repair"]);
    Started { fixture, output }
});

/// Whether process `pid` runs; a zombie is dead for our purposes (/proc/<pid>/stat's state field is Z).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            != Some("Z")
    })
}

/// How long a test waits for a state another process brings about before it fails: far beyond what
/// the state takes on an idle machine (well under a second), so that a loaded one (many tests at once on
/// few cores) is slow, not failed.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Polls `ready` until it holds; panics naming `what` if it does not within [`PATIENCE`].
#[track_caller]
pub fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !ready() {
        assert!(
            Instant::now() < deadline,
            "{what}: not so after {PATIENCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until process `pid` (`what`, for the failure) has ended; a process that was to be ended and
/// is not fails the test after [`PATIENCE`].
#[track_caller]
pub fn assert_gone(pid: i32, what: &str) {
    wait_until(&format!("{what} (pid {pid}) ended"), || !alive(pid));
}

/// `child`'s output once it ends; a child still running after [`PATIENCE`] is killed and fails the
/// test (`what` says what it was doing), where `wait_with_output` would hang the run.
#[track_caller]
pub fn output_within(child: std::process::Child, what: &str) -> Output {
    let pid = child.id() as i32;
    let (sender, ended) = std::sync::mpsc::channel();
    // read its pipes while waiting, so that a child with much to say is not blocked on them
    std::thread::spawn(move || sender.send(child.wait_with_output().unwrap()));
    ended.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        // SAFETY: a plain kill(2) of the child, still unreaped: the pid is still its own
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let out = ended.recv().unwrap();
        panic!("{what}: still running after {PATIENCE:?}:\n{}", both(&out));
    })
}

/// The seed of a test's random draws: `CUTILE_PERF_TEST_SEED` where set (to replay a failure, whose
/// message names its seed), else one from the clock; each test that draws names it in its failures.
pub fn test_seed() -> u64 {
    match std::env::var("CUTILE_PERF_TEST_SEED") {
        Ok(seed) => seed
            .parse()
            .unwrap_or_else(|_| panic!("CUTILE_PERF_TEST_SEED={seed:?} is not a number")),
        Err(_) => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// stdout then stderr.
pub fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// Writes a shell script at `path` (its directory made) and makes it executable.
pub fn write_script(path: &Path, contents: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs `command` with `input` on its stdin; returns what it printed.
pub fn with_input(command: &mut Command, input: &str) -> Output {
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap()
}

pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name();
        if name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else {
            fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// The message of a baseline commit as `start` writes it (through the same writers), for tests and
/// benchmarks that need a session without running pytest: `kernel` and `test` are the session's,
/// `allowed` its allowed paths, and the baseline has one config of 1 ms.
pub fn baseline_message(kernel: &str, test: &str, allowed: &[&str]) -> String {
    let config = Measurement {
        pass: "forward".to_string(),
        test: format!("{test}::test_perf"),
        value: 1.0,
        mean: None,
    };
    measured_baseline_message(&session_of(kernel, test, allowed), vec![config])
}

/// A session without a GPU as `start` declares it, by the default rules on medians.
pub fn session_of(kernel: &str, test: &str, allowed: &[&str]) -> Session {
    Session {
        kernel: kernel.to_string(),
        test: test.to_string(),
        perf_file: None,
        allowed: allowed.iter().map(|p| p.to_string()).collect(),
        statistic: Statistic::Median,
        thresholds: Thresholds::DEFAULT,
        python: "python3".to_string(),
        filter: None,
        class: None,
        class_source: None,
        gpu: None,
        gpu_state: None,
        no_gpu: true,
        benchmark: None,
        // as a session recorded before notes existed: the fixture's sessions carry none
        noted: false,
        runner: git_cutile_perf::system::runner::RunnerSettings::default(),
        spread: Vec::new(),
        harness: None,
        ignored: None,
    }
}

/// The baseline commit's message for `session` with the baseline's `configs`, its latency their
/// geometric mean as `start` records it.
pub fn measured_baseline_message(session: &Session, configs: Vec<Measurement>) -> String {
    let latency = git_cutile_perf::rules::stats::geometric_mean(configs.iter().map(|c| c.value))
        .expect("a baseline measures some config");
    let baseline = Iteration::baseline(latency, configs, "baseline".to_string(), None);
    let mut block = Block::default();
    baseline.write(&mut block);
    session.write(&mut block);
    render_message(
        &format!("cutile-perf: baseline {latency:.6} ms"),
        None,
        &block,
    )
}
