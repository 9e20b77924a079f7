//! Spare workers: processes started once a step has kept its baseline's worker, before the next
//! candidate's code exists. Each starts the interpreter, imports pytest, torch and what the kept worker
//! loaded from outside its tree, makes its GPU context and starts the profiler (on an H100, 8-10 s of a
//! worker's 12-13 s start-up), then waits beside the kept worker. The next step gives one a worker's command, channel and tree (a worker spawned with it), so
//! that the candidate's first worker pays only its own configuration and collection; where the machine
//! has CPUs for the next rounds' workers to start with the step, the pairs of rounds 2 to 4 are made of
//! six more.
//! Where a spare could load other code than a fresh worker (a module of the tree's own, a library
//! changed on disk, a variable that differs), it starts the command afresh in its own process: never a
//! wrong start, at worst an ordinary one. The program is `cutile_perf_spare.py`, whose docstring
//! describes its channel.
//!
//! Each is recorded beside the kept workers (`lasting-spare-<gpu>.json`, `lasting-spare-<gpu>.1.json`,
//! ...), so that what ends, lists or spares them (`repair`, `status`, the GPU check, the orphan sweep)
//! sees them too; a step that cannot use one (its environment changed, it is gone) ends it and starts a
//! fresh worker, as before.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::lasting::{self, Code, Lasting, WorkerEnv};
use super::{CHANNEL_OPTION, SPARE_PROGRAM, WORKER_PLUGIN};
use crate::system::git::Repo;
use crate::system::process::{self, Background};
use crate::system::pytest::{self, Bytecode, CASES_PLUGIN};

/// The side a spare's record names.
pub const SPARE: &str = "spare";

/// The most spares kept for one GPU: the next candidate's first worker and the pairs of its rounds 2
/// to 5 (the most rounds whose workers start with a step).
pub const MOST_SPARES: usize = 9;

/// How many rounds' pairs the spares cover by default, after the candidate's first worker: rounds 2 to
/// 4. On an H100, with spares for rounds 2 and 3, softmax's round 4, whose workers started afresh with
/// the step (and were held while the other side measured), waited 6.0 s for them; round 5's were ready
/// in time. Each spare holds about 620 MiB of GPU memory.
pub const ROUNDS_BY_DEFAULT: usize = 3;

/// Where spare `index` for `gpu` (`CUDA_VISIBLE_DEVICES`; none: all the machine's) is recorded: among
/// the kept workers' records, under a name no GPU's record has (theirs keep no `-` after `lasting-`).
fn record_path(repo: &Repo, gpu: Option<&str>, index: usize) -> Result<PathBuf> {
    let kept = lasting::record_path(repo, gpu)?;
    let name = kept.file_name().unwrap_or_default().to_string_lossy();
    let name = name.replacen("lasting-", "lasting-spare-", 1);
    Ok(kept.with_file_name(match index {
        0 => name,
        index => name.replacen(".json", &format!(".{index}.json"), 1),
    }))
}

/// A spare taken from its record: the caller's, to become a worker (one spawned with it) or, dropped
/// unused, to end with its home.
pub struct Spare(Option<Lasting>);

impl Spare {
    /// Its record, its process's now; it is no longer ended when dropped.
    pub(super) fn into_record(mut self) -> Lasting {
        self.0.take().expect("a spare is taken once")
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        if let Some(spare) = self.0.take() {
            end(&spare);
        }
    }
}

/// Ends `spare`'s process group and removes its home.
fn end(spare: &Lasting) {
    spare.end_process();
    let _ = std::fs::remove_dir_all(&spare.home);
}

/// A spare recorded for the GPU of `env` that can become a worker under `env`, its record removed; each
/// one before it that cannot is ended, and `say` is told why.
pub fn take(repo: &Repo, env: &WorkerEnv, say: &dyn Fn(String)) -> Result<Option<Spare>> {
    for index in 0..MOST_SPARES {
        let path = record_path(repo, env.gpu.as_deref(), index)?;
        let Some((_, spare)) = lasting::own(repo, path.clone())? else {
            continue;
        };
        let _ = std::fs::remove_file(&path);
        match spare.cannot_take(env) {
            None => return Ok(Some(Spare(Some(spare)))),
            // one that ended by itself, idle too long, is no news
            Some(_) if !spare.process.alive() => end(&spare),
            Some(why) => {
                say(format!(
                    "the spare worker (pid {}) cannot serve this step ({why}): it is ended and a fresh \
                     one starts",
                    spare.process.pid
                ));
                end(&spare);
            }
        }
    }
    Ok(None)
}

/// Ends every spare recorded for `gpu`; returns their pids.
pub fn end_all(repo: &Repo, gpu: Option<&str>) -> Result<Vec<u32>> {
    let mut ended = Vec::new();
    for index in 0..MOST_SPARES {
        let path = record_path(repo, gpu, index)?;
        if let Some((_, spare)) = lasting::own(repo, path.clone())? {
            end(&spare);
            ended.push(spare.process.pid);
        }
        let _ = std::fs::remove_file(&path);
    }
    Ok(ended)
}

/// Starts spare `index` for the workers `env` describes, in `home`, its output into `log`, and records
/// it for the next step; returns its record. It imports ahead what `like` (the session's last worker)
/// loaded from outside its tree.
pub fn start(
    repo: &Repo,
    env: &WorkerEnv,
    like: &Lasting,
    (index, home, log): (usize, &Path, &Path),
) -> Result<Lasting> {
    let channel = lasting::channel_in(home, 0);
    std::fs::create_dir_all(&channel)
        .with_context(|| format!("cannot create {}", channel.display()))?;
    // a worker that wrote none (an older one) leaves the spare its torch alone
    let _ = std::fs::copy(like.channel().join("modules"), channel.join("preload"));
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
        record_path(repo, env.gpu.as_deref(), index).and_then(|path| lasting::save(&path, &record));
    if let Err(e) = saved {
        // unrecorded, it would be nobody's
        record.end_process();
        return Err(e);
    }
    Ok(record)
}
