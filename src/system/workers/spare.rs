//! The spare worker: a process started once a step has kept its baseline's worker, before the next
//! candidate's code exists. It starts the interpreter, imports pytest and torch, makes its GPU context and
//! starts the profiler (on an H100, 6-10 s of the candidate's first start-up), then waits beside the kept
//! worker; the next step checks the candidate's code out into its home and gives it the worker's command
//! ([`Worker::take_spare`]), so that the candidate's first worker pays only its own collection. Where the
//! spare could load other code than a fresh worker (a module of the tree's own, a library changed on disk,
//! a variable that differs), it starts the command afresh in its own process: never a wrong start, at
//! worst an ordinary one. The program is `cutile_perf_spare.py`, whose docstring describes its channel.
//!
//! It is recorded beside the kept workers (`lasting-spare-<gpu>.json`), so that what ends, lists or
//! spares them (`repair`, `status`, the GPU check, the orphan sweep) sees it too; a step that cannot use
//! it (its environment changed, it is gone) ends it and starts a fresh worker, as before.
//!
//! [`Worker::take_spare`]: super::Worker::take_spare

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::lasting::{self, Code, Lasting, WorkerEnv};
use super::{CHANNEL_OPTION, WORKER_PLUGIN};
use crate::system::git::Repo;
use crate::system::process::{self, Background};
use crate::system::pytest::{self, Bytecode, CASES_PLUGIN};

/// The program a spare runs, from the plugin folder where the worker plugin it imports is too.
pub(super) const SPARE_PROGRAM: (&str, &str) = ("cutile_perf_spare", include_str!("cutile_perf_spare.py"));

/// The side a spare's record names.
pub const SPARE: &str = "spare";

/// Where the spare for `gpu` (`CUDA_VISIBLE_DEVICES`; none: all the machine's) is recorded: among the
/// kept workers' records, under a name no GPU's record has (theirs keep no `-` after `lasting-`).
pub fn record_path(repo: &Repo, gpu: Option<&str>) -> Result<PathBuf> {
    let kept = lasting::record_path(repo, gpu)?;
    let name = kept.file_name().unwrap_or_default().to_string_lossy();
    Ok(kept.with_file_name(name.replacen("lasting-", "lasting-spare-", 1)))
}

/// The spare recorded for `gpu`, if this repository's record names one of its own. The record is
/// removed: the spare is the caller's now, to take or to end.
pub fn take_record(repo: &Repo, gpu: Option<&str>) -> Result<Option<Lasting>> {
    let path = record_path(repo, gpu)?;
    let found = lasting::own(repo, path.clone())?.map(|(_, spare)| spare);
    let _ = std::fs::remove_file(&path);
    Ok(found)
}

/// Starts a spare for the workers `env` describes, in `home` (its tree will be `home/tree`), its output
/// into `log`, and records it for the next step; returns its record.
pub fn start(repo: &Repo, env: &WorkerEnv, home: &Path, log: &Path) -> Result<Lasting> {
    let channel = lasting::channel_in(home, 0);
    std::fs::create_dir_all(&channel)
        .with_context(|| format!("cannot create {}", channel.display()))?;
    let plugins = home.join("plugins");
    std::fs::create_dir_all(&plugins)
        .with_context(|| format!("cannot create {}", plugins.display()))?;
    for plugin in [WORKER_PLUGIN, CASES_PLUGIN, SPARE_PROGRAM] {
        pytest::write_plugin(&plugins, plugin)?;
    }
    let words = pytest::python_words(&env.python)?;
    let (program, python_args) = words.split_first().context("--python is empty")?;
    let script = plugins.join(format!("{}.py", SPARE_PROGRAM.0));
    let channel_arg = format!("{CHANNEL_OPTION}{}", channel.display());
    let mut args: Vec<&str> = python_args.iter().map(String::as_str).collect();
    args.extend([
        script.to_str().context("a home that is not UTF-8")?,
        &channel_arg,
    ]);
    // the workers' environment but for what names a tree: `go` gives that
    let mut python_path = vec![plugins.clone()];
    // an empty entry would be the spare's folder, which the tree is checked out in later
    python_path.extend(
        std::env::split_paths(&std::env::var_os("PYTHONPATH").unwrap_or_default())
            .filter(|entry| !entry.as_os_str().is_empty()),
    );
    let mut expression = process::session_command(program, &args)
        .dir(home)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONPATH", std::env::join_paths(python_path)?);
    for (name, value) in Bytecode::outside_any_tree().env() {
        expression = expression.env(name, value);
    }
    if let Some(gpu) = &env.gpu {
        expression = expression.env("CUDA_VISIBLE_DEVICES", gpu);
    }
    let mut started = Background::start(expression, log)?;
    let identity = started
        .leader()
        .context("cannot read the spare's identity in /proc")?
        .clone();
    started.keep();
    let record = Lasting {
        process: identity,
        side: SPARE.to_string(),
        // none yet: the step that takes it gives it the candidate's
        code: Code {
            commit: String::new(),
            tree: String::new(),
        },
        env: env.clone(),
        home: home.to_path_buf(),
        log: log.to_path_buf(),
        started: lasting::now_s(),
        last_command: lasting::now_s(),
        commands: 0,
        measured: false,
        slot: 0,
    };
    let saved =
        record_path(repo, env.gpu.as_deref()).and_then(|path| lasting::save(&path, &record));
    if let Err(e) = saved {
        // unrecorded, it would be nobody's
        record.end_process();
        return Err(e);
    }
    Ok(record)
}
