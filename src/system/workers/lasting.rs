//! Workers that outlive a step: the worker holding the baseline's code after a step is left running, in
//! a session of its own, and recorded under the git dir (`cutile-perf/workers/lasting-<gpu>.json`), so
//! that the next step pays no start-up, compile or tuning for the baseline. The record says everything
//! the worker's runs depend on; a step reuses the worker only when all of it still holds, and ends it
//! otherwise. The worker ends itself when idle too long or when its channel is gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::CHANNEL_OPTION;
use crate::system::git::Repo;
use crate::system::gpu::GpuState;
use crate::system::process;
use crate::system::process_identity::ProcessIdentity;
use crate::system::runner::{Runner, Workers};

/// The code a worker holds: a commit (for a candidate, one made of the step's snapshot) and its tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Code {
    pub commit: String,
    pub tree: String,
}

/// What a worker's runs depend on besides its code: a kept worker serves a later command only when all
/// of it is the same then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerEnv {
    pub python: String,
    pub test: String,
    /// The test file's content as the work tree holds it (links followed): its git blob id; none where
    /// it cannot be read. A test that changed where git does not see it (a file a link points at) ends
    /// the worker that collected the old one.
    #[serde(default)]
    pub test_content: Option<String>,
    pub filter: Option<String>,
    /// Every variable of the environment the tool passes on to its tests (a switch the code reads, as
    /// `TILEGYM_DISABLE_AUTOTUNE` or a `CUDA_*` one, `PYTHONPATH`), by name, each value as a digest (its
    /// git blob id) so that the record on disk holds no value: a worker started under other values
    /// would run other code than a fresh one. The shell's own bookkeeping ([`NOT_PASSED_ON`]) and the
    /// tool's own settings ([`TOOL_SETTINGS`]) are left out. Empty in a record written before it was
    /// kept, which no worker serves then.
    #[serde(default)]
    pub environment: BTreeMap<String, String>,
    /// `CUDA_VISIBLE_DEVICES`: the GPU the worker's CUDA context is on.
    pub gpu: Option<String>,
    /// The code of the tool's own plugins it runs ([`plugins_digest`]): a worker another build of the
    /// tool started speaks that build's channel. Empty in a record written before it was kept, which no
    /// worker serves then.
    #[serde(default)]
    pub plugins: String,
}

/// Every plugin a worker or a spare loads, by name and source.
const PLUGINS: [(&str, &str); 5] = [
    super::WORKER_PLUGIN,
    super::SPARE_PROGRAM,
    crate::system::pytest::CASES_PLUGIN,
    crate::system::pytest::CENSUS_PLUGIN,
    crate::system::pytest::SEEDS_PLUGIN,
];

/// One digest of every plugin a worker or a spare loads: a build whose plugins differ is another.
fn plugins_digest() -> String {
    let all: Vec<u8> = (PLUGINS.iter())
        .flat_map(|(name, source)| [name.as_bytes(), b"\0", source.as_bytes(), b"\0"].concat())
        .collect();
    blob_id(&all)
}

/// The file in a worker's channel that lists what it imported from outside its tree.
const IMPORTED: &str = "imported";

/// A file's size and its modification time in nanoseconds, as Python's `os.stat` gives them.
fn size_and_time(metadata: &std::fs::Metadata) -> (u64, i128) {
    use std::os::unix::fs::MetadataExt;
    let nanos = i128::from(metadata.mtime()) * 1_000_000_000 + i128::from(metadata.mtime_nsec());
    (metadata.size(), nanos)
}

/// Variables a shell sets afresh for each command it runs, which say where and how it was typed, not
/// what the tests run: a worker is not ended for them.
const NOT_PASSED_ON: [&str; 4] = ["_", "OLDPWD", "PWD", "SHLVL"];

/// The tool's own settings, each read where it is defined (`measure::paired::settings`, the `Ui`, the
/// GPU peaks): the tool reads them and its workers do not, so a worker is not ended for them, and
/// `CUTILE_PERF_NO_PROGRESS=1` or another spare count for one step keeps the warm workers.
pub const TOOL_SETTINGS: [&str; 9] = [
    "CUTILE_PERF_STAND_BY_FROM_ROUND",
    "CUTILE_PERF_READY_TOGETHER",
    "CUTILE_PERF_STAND_BY_AT_ONCE",
    "CUTILE_PERF_REROLL_ALIKE",
    "CUTILE_PERF_STAND_BY_ROUNDS",
    "CUTILE_PERF_SPARES",
    "CUTILE_PERF_REFILL_SPARES",
    "CUTILE_PERF_NO_PROGRESS",
    "CUTILE_PERF_GPU_PEAK",
];

impl WorkerEnv {
    /// The environment of a session's workers started now from the work tree at `root`, on `gpu`.
    pub fn now(
        root: &Path,
        python: &str,
        test: &str,
        filter: Option<&str>,
        gpu: Option<String>,
    ) -> WorkerEnv {
        WorkerEnv {
            python: python.to_string(),
            test: test.to_string(),
            test_content: std::fs::read(root.join(test))
                .ok()
                .map(|bytes| blob_id(&bytes)),
            filter: filter.map(str::to_string),
            environment: environment(std::env::vars_os()),
            gpu,
            plugins: plugins_digest(),
        }
    }

    /// Why a worker started under this environment would run otherwise than one started under `now`;
    /// `None` when it would not.
    fn differs_from(&self, now: &WorkerEnv) -> Option<String> {
        let was = self;
        if was.python != now.python {
            return differs("python", &was.python, &now.python);
        }
        if was.test != now.test {
            return differs("test file", &was.test, &now.test);
        }
        if was.test_content != now.test_content {
            return Some(format!("the test file {} has other content now", now.test));
        }
        if was.filter != now.filter {
            return differs("filter", &was.filter, &now.filter);
        }
        if was.gpu != now.gpu {
            return differs("CUDA_VISIBLE_DEVICES", &was.gpu, &now.gpu);
        }
        if was.plugins != now.plugins {
            return Some("another build of git cutile-perf started it".into());
        }
        let changed = differing(&was.environment, &now.environment);
        if !changed.is_empty() {
            let shown = changed[..changed.len().min(3)].join(", ");
            return Some(match changed.len().saturating_sub(3) {
                0 => format!("its environment was another: {shown}"),
                more => format!("its environment was another: {shown} and {more} more"),
            });
        }
        None
    }

    /// The GPU the tool's environment gives its workers.
    pub fn visible_gpu() -> Option<String> {
        std::env::var("CUDA_VISIBLE_DEVICES").ok()
    }
}

/// The environment `vars` as [`WorkerEnv::environment`] keeps it: each value a digest.
fn environment(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> BTreeMap<String, String> {
    vars.filter(|(name, _)| {
        let among = |names: &[&str]| names.iter().any(|listed| name == *listed);
        !among(&NOT_PASSED_ON) && !among(&TOOL_SETTINGS)
    })
    .map(|(name, value)| {
        (
            name.to_string_lossy().into_owned(),
            blob_id(value.as_encoded_bytes()),
        )
    })
    .collect()
}

/// The git blob id of `bytes`: a digest that names content, as git does.
fn blob_id(bytes: &[u8]) -> String {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map_or_else(|e| format!("unhashed: {e}"), |id| id.to_string())
}

/// The names of the variables whose values differ between `was` and `now` (set, unset or changed).
fn differing(was: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = was.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| match (was.get(name), now.get(name)) {
            (Some(a), Some(b)) if a == b => None,
            (Some(_), Some(_)) => Some(format!("{name} changed")),
            (None, _) => Some(format!("{name} set")),
            (_, None) => Some(format!("{name} unset")),
        })
        .collect()
}

/// A worker left running between commands, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lasting {
    pub process: ProcessIdentity,
    /// The side it serves: `baseline`.
    pub side: String,
    pub code: Code,
    pub env: WorkerEnv,
    /// Its folder: the worktree it runs from (`tree/`) and its channel (`channel/`).
    pub home: PathBuf,
    /// Its output.
    pub log: PathBuf,
    /// Seconds since the epoch.
    pub started: u64,
    pub last_command: u64,
    /// Commands given so far: the next one is numbered after them.
    pub commands: u32,
    /// Whether it has measured a repetition (a later crash is then the worker's, not the code's).
    pub measured: bool,
    /// Which of its home's channels is its own ([`channel_in`]): another than the first for a worker
    /// started ahead of its round beside the one measuring.
    #[serde(default)]
    pub slot: u8,
}

impl Lasting {
    /// Why this worker cannot serve `code` under `env` now; `None` when it can (its channel is
    /// asked separately).
    pub fn cannot_serve(&self, code: &Code, env: &WorkerEnv) -> Option<String> {
        if !self.process.alive() {
            return Some("it is no longer running".into());
        }
        if self.code.commit != code.commit {
            return Some(format!(
                "it holds commit {}, the baseline is {}",
                short(&self.code.commit),
                short(&code.commit)
            ));
        }
        if self.code.tree != code.tree {
            return differs("tree", &self.code.tree, &code.tree);
        }
        self.env.differs_from(env)
    }

    /// Why this spare cannot become a worker under `env` now (its code is given then); `None` when it
    /// can.
    pub fn cannot_take(&self, env: &WorkerEnv) -> Option<String> {
        if !self.process.alive() {
            return Some("it is no longer running".into());
        }
        self.env.differs_from(env)
    }

    /// Why the files it imported from outside its tree (and the directories on its `sys.path`) no
    /// longer are as it loaded them, by size and time: the first that changed or went away, named;
    /// `None` when all are as they were. A worker that wrote no list is not to be trusted either.
    pub fn imported_changed(&self) -> Option<String> {
        let path = self.channel().join(IMPORTED);
        let Ok(text) = std::fs::read_to_string(&path) else {
            return Some("it recorded no list of the files it imported".into());
        };
        let Ok(imported) = serde_json::from_str::<BTreeMap<String, (u64, i128)>>(&text) else {
            return Some("its list of the files it imported cannot be read".into());
        };
        imported.iter().find_map(|(file, &was)| {
            let now = std::fs::metadata(file).ok().map(|m| size_and_time(&m));
            match now {
                None => Some(format!("{file}, which it imported, is gone")),
                Some(now) if now != was => Some(format!(
                    "{file}, which it imported, changed since it started"
                )),
                Some(_) => None,
            }
        })
    }

    /// Its channel directory.
    pub fn channel(&self) -> PathBuf {
        channel_in(&self.home, self.slot)
    }

    /// Seconds since its last command.
    pub fn idle_s(&self) -> u64 {
        now_s().saturating_sub(self.last_command)
    }

    /// Ends its process group if it is still the process recorded (never a reused pid).
    pub fn end_process(&self) {
        process::end_led_group(&self.process);
    }
}

/// The channel of a worker in `home`: `channel/` for slot 0, else `channel.<slot>/`, one for each worker
/// that starts while another still serves (a later round's, started ahead of it).
pub fn channel_in(home: &Path, slot: u8) -> PathBuf {
    match slot {
        0 => home.join("channel"),
        slot => home.join(format!("channel.{slot}")),
    }
}

/// Where the worker kept for `gpu` (`CUDA_VISIBLE_DEVICES`; none: all the machine's) is recorded.
pub fn record_path(repo: &Repo, gpu: Option<&str>) -> Result<PathBuf> {
    let key: String = gpu
        .unwrap_or("all")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    repo.git_path(&format!("{WORKERS_DIR}/lasting-{key}.json"))
}

/// The folder under the git dir that holds the workers' homes and records.
pub const WORKERS_DIR: &str = "cutile-perf/workers";

/// Writes `record` whole at `path`.
pub fn save(path: &Path, record: &Lasting) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::system::disk::write_whole(path, serde_json::to_string_pretty(record)?)
}

/// The record at `path`, if there is a readable one.
pub fn load(path: &Path) -> Option<Lasting> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The worker kept for `gpu`, if this repository's record names one of its own.
pub fn kept(repo: &Repo, gpu: Option<&str>) -> Result<Option<(PathBuf, Lasting)>> {
    let path = record_path(repo, gpu)?;
    own(repo, path)
}

/// The record at `path` if it names a worker of this repository: a record copied along with the git
/// dir (a copied repository) names another one's worker, which is not ours to reuse or end, so it is
/// removed.
pub(super) fn own(repo: &Repo, path: PathBuf) -> Result<Option<(PathBuf, Lasting)>> {
    Ok(own_under(&repo.git_path(WORKERS_DIR)?, path))
}

/// [`own`], for the repository whose workers' folder is `workers`.
pub(super) fn own_under(workers: &Path, path: PathBuf) -> Option<(PathBuf, Lasting)> {
    let record = load(&path)?;
    if !record.home.starts_with(workers) {
        let _ = std::fs::remove_file(&path);
        return None;
    }
    Some((path, record))
}

/// Every kept worker's record, with its path, in the order of their paths.
pub fn all(repo: &Repo) -> Result<Vec<(PathBuf, Lasting)>> {
    let dir = repo.git_path(WORKERS_DIR)?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("lasting-") && name.ends_with(".json")
        })
        .collect();
    paths.sort();
    let mut records = Vec::new();
    for path in paths {
        records.extend(own(repo, path)?);
    }
    Ok(records)
}

/// For each process of `state` that is a warm worker of git cutile-perf kept for another repository's
/// session on this machine (`runner` runs here), a line saying whose it is and how to end it: such a
/// worker is idle between that session's steps, but it holds GPU memory.
pub fn others_on_gpu(state: Option<&GpuState>, runner: &dyn Runner) -> Vec<String> {
    if runner.workers() != Workers::Lasting {
        return Vec::new();
    }
    let processes = state.map_or(&[][..], |state| &state.processes[..]);
    processes
        .iter()
        .filter_map(|p| {
            let repository = worker_repository(p.pid)?;
            Some(format!(
                "pid {} is a warm worker git cutile-perf keeps for the session in {}, idle between its \
                 steps; `git cutile-perf repair` there ends it",
                p.pid,
                repository.display()
            ))
        })
        .collect()
}

/// The repository a warm worker on this machine serves, read from its command line: its channel is
/// `<git dir>/cutile-perf/workers/<home>/channel`.
fn worker_repository(pid: u32) -> Option<PathBuf> {
    let command_line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let channel = command_line
        .split(|&byte| byte == 0)
        .find_map(|arg| arg.strip_prefix(CHANNEL_OPTION.as_bytes()))?;
    let channel = Path::new(std::str::from_utf8(channel).ok()?);
    let git_dir = channel.ancestors().nth(4)?;
    Some(match git_dir.file_name() {
        Some(name) if name == ".git" => git_dir.parent()?.to_path_buf(),
        _ => git_dir.to_path_buf(),
    })
}

/// Seconds since the epoch.
pub fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Why a worker differs in `what`: it `was` one thing, `now` another.
fn differs(what: &str, was: &dyn std::fmt::Debug, now: &dyn std::fmt::Debug) -> Option<String> {
    Some(format!("its {what} was {was:?}, now {now:?}"))
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment record of the variables `pairs` set.
    fn environment_of(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        environment((pairs.iter()).map(|&(name, value)| (name.into(), value.into())))
    }

    fn record() -> Lasting {
        Lasting {
            process: ProcessIdentity::current().unwrap(),
            side: "baseline".into(),
            code: Code {
                commit: "a".repeat(40),
                tree: "b".repeat(40),
            },
            env: WorkerEnv {
                python: "python3".into(),
                test: "tests/t.py".into(),
                test_content: Some(blob_id(b"def test_perf(): pass\n")),
                filter: None,
                environment: environment_of(&[
                    ("PATH", "/usr/bin"),
                    ("TILEGYM_DISABLE_AUTOTUNE", "0"),
                ]),
                gpu: Some("0".into()),
                plugins: plugins_digest(),
            },
            home: "/nowhere".into(),
            log: "/nowhere.log".into(),
            started: 0,
            last_command: 0,
            commands: 3,
            measured: true,
            slot: 0,
        }
    }

    #[test]
    fn a_worker_serves_only_the_code_and_environment_it_was_started_with() {
        let kept = record();
        assert_eq!(kept.cannot_serve(&kept.code, &kept.env), None);
        let other_commit = Code {
            commit: "c".repeat(40),
            ..kept.code.clone()
        };
        assert_eq!(
            kept.cannot_serve(&other_commit, &kept.env).as_deref(),
            Some("it holds commit aaaaaaaaaaaa, the baseline is cccccccccccc")
        );
        let other_gpu = WorkerEnv {
            gpu: Some("1".into()),
            ..kept.env.clone()
        };
        assert_eq!(
            kept.cannot_serve(&kept.code, &other_gpu).as_deref(),
            Some("its CUDA_VISIBLE_DEVICES was Some(\"0\"), now Some(\"1\")")
        );
        let other_build = WorkerEnv {
            plugins: String::new(),
            ..kept.env.clone()
        };
        assert_eq!(
            kept.cannot_serve(&kept.code, &other_build).as_deref(),
            Some("another build of git cutile-perf started it")
        );
        let other_filter = WorkerEnv {
            filter: Some("large".into()),
            ..kept.env.clone()
        };
        assert!(
            kept.cannot_serve(&kept.code, &other_filter)
                .unwrap()
                .starts_with("its filter was")
        );
        let other_test = WorkerEnv {
            test_content: Some(blob_id(b"def test_perf(): faster()\n")),
            ..kept.env.clone()
        };
        assert_eq!(
            kept.cannot_serve(&kept.code, &other_test).as_deref(),
            Some("the test file tests/t.py has other content now")
        );
        let other_environment = WorkerEnv {
            environment: environment_of(&[
                ("PATH", "/usr/bin"),
                ("TILEGYM_DISABLE_AUTOTUNE", "1"),
                ("CUDA_LAUNCH_BLOCKING", "1"),
            ]),
            ..kept.env.clone()
        };
        assert_eq!(
            kept.cannot_serve(&kept.code, &other_environment).as_deref(),
            Some(
                "its environment was another: CUDA_LAUNCH_BLOCKING set, TILEGYM_DISABLE_AUTOTUNE changed"
            )
        );
        // nor are the tool's own settings, which no worker reads
        let settings = WorkerEnv {
            environment: environment_of(&[
                ("PATH", "/usr/bin"),
                ("TILEGYM_DISABLE_AUTOTUNE", "0"),
                ("CUTILE_PERF_REROLL_ALIKE", "1"),
                ("CUTILE_PERF_SPARES", "0"),
            ]),
            ..kept.env.clone()
        };
        assert_eq!(kept.cannot_serve(&kept.code, &settings), None);
        // what the shell sets afresh for each command is no part of it; no value is kept in the clear
        let shell = environment_of(&[
            ("_", "/usr/bin/git"),
            ("PWD", "/home/me"),
            ("SECRET", "hunter2"),
        ]);
        assert_eq!(shell.keys().collect::<Vec<_>>(), ["SECRET"]);
        assert!(!serde_json::to_string(&shell).unwrap().contains("hunter2"));
        let gone = Lasting {
            process: ProcessIdentity {
                start_ticks: kept.process.start_ticks + 1,
                ..kept.process.clone()
            },
            ..kept.clone()
        };
        assert_eq!(
            gone.cannot_serve(&kept.code, &kept.env).as_deref(),
            Some("it is no longer running")
        );
    }

    #[test]
    fn records_are_keyed_by_gpu_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w/lasting-0.json");
        save(&path, &record()).unwrap();
        assert_eq!(load(&path), Some(record()));
        assert_eq!(load(&dir.path().join("w/none.json")), None);
    }

    #[test]
    fn no_plugin_reads_a_setting_that_ends_no_worker() {
        for (plugin, source) in PLUGINS {
            for setting in TOOL_SETTINGS {
                assert!(!source.contains(setting), "{plugin} reads {setting}");
            }
        }
    }
}
