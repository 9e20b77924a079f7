//! Spare workers: processes started before the candidate's code they will run exists, once a step has
//! kept its baseline's worker and, where the step's settings ask, as each of its rounds begins.
//! Each starts the interpreter, imports pytest, torch and what the baseline's worker loaded from outside
//! its tree, makes its GPU context and starts the profiler (on an H100, 8-10 s of a worker's 12-13 s
//! start-up), then waits. A step gives one a worker's command, channel and tree (a worker spawned with
//! it), so that the worker pays only its own configuration and collection: the candidate's first, the
//! pairs of the rounds that start with the step, and, from the spares topped up during the rounds
//! ([`Pool`]), those of the rounds after them.
//! Where a spare could load other code than a fresh worker (a module of the tree's own, a library
//! changed on disk, a variable that differs), it starts the command afresh in its own process: never a
//! wrong start, at worst an ordinary one. The program is `cutile_perf_spare.py`, whose docstring
//! describes its channel.
//!
//! Each is recorded beside the kept workers (`lasting-spare-<gpu>.json`, `lasting-spare-<gpu>.1.json`,
//! ...), so that what ends, lists or spares them (`repair`, `status`, the GPU check, the orphan sweep)
//! sees them too; a step that cannot use one (its environment changed, it is gone) ends it and starts a
//! fresh worker, as before.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};

use super::channel::{MODULES, OWNER, PRELOAD, SPARE_READY, own};
use super::lasting::{self, Code, Lasting, WorkerEnv};
use super::{CHANNEL_OPTION, SPARE_PROGRAM, WORKER_PLUGIN};
use crate::system::disk::write_whole;
use crate::system::git::Repo;
use crate::system::process::{self, Background};
use crate::system::pytest::{self, Bytecode, CASES_PLUGIN};

/// The side a spare's record names.
pub const SPARE: &str = "spare";

/// The most spares kept for one GPU: the next candidate's first worker and the pairs of its rounds 2
/// to 5 (the most rounds whose workers start with a step).
pub const MOST_SPARES: usize = 9;

/// Where the spares for one GPU are recorded: among the kept workers' records, under names no GPU's
/// record has (theirs keep no `-` after `lasting-`), one for each of the [`MOST_SPARES`].
struct Records {
    paths: Vec<PathBuf>,
    /// The repository's workers' folder, where every spare of its own has its home.
    workers: PathBuf,
}

impl Records {
    /// Those for `gpu` (`CUDA_VISIBLE_DEVICES`; none: all the machine's).
    fn of(repo: &Repo, gpu: Option<&str>) -> Result<Records> {
        let kept = lasting::record_path(repo, gpu)?;
        let name = kept.file_name().unwrap_or_default().to_string_lossy();
        let name = name.replacen("lasting-", "lasting-spare-", 1);
        let paths = (0..MOST_SPARES)
            .map(|index| {
                kept.with_file_name(match index {
                    0 => name.to_string(),
                    index => name.replacen(".json", &format!(".{index}.json"), 1),
                })
            })
            .collect();
        Ok(Records {
            paths,
            workers: repo.git_path(lasting::WORKERS_DIR)?,
        })
    }

    /// Each spare recorded, with the index of its place.
    fn each(&self) -> impl Iterator<Item = (usize, Lasting)> + '_ {
        (self.paths.iter().enumerate()).filter_map(|(index, path)| {
            lasting::own_under(&self.workers, path.clone()).map(|(_, spare)| (index, spare))
        })
    }

    /// The first spare recorded that can become a worker under `env` and that `wanted` picks, its record
    /// removed; each one met that cannot is ended, and `say` is told why.
    fn take(
        &self,
        env: &WorkerEnv,
        say: &dyn Fn(String),
        wanted: impl Fn(&Lasting) -> bool,
    ) -> Option<Spare> {
        for (index, spare) in self.each() {
            match spare.cannot_take(env) {
                None if !wanted(&spare) => continue,
                None => {
                    let _ = std::fs::remove_file(&self.paths[index]);
                    return Some(Spare(Some(spare)));
                }
                // one that ended by itself, idle too long, is no news
                Some(_) if !spare.process.alive() => end(&spare),
                Some(why) => {
                    say(format!(
                        "the spare worker (pid {}) cannot serve this step ({why}): it is ended and a \
                         fresh one starts",
                        spare.process.pid
                    ));
                    end(&spare);
                }
            }
            let _ = std::fs::remove_file(&self.paths[index]);
        }
        None
    }

    /// [`Records::take`] of a ready spare, else of one still starting: either is ahead of a fresh worker.
    fn take_soonest(&self, env: &WorkerEnv, say: &dyn Fn(String)) -> Option<Spare> {
        (self.take(env, say, is_ready)).or_else(|| self.take(env, say, |_| true))
    }
}

/// A spare taken from its record: the caller's, to become a worker (one spawned with it) or, dropped
/// unused, to end with its home.
pub struct Spare(Option<Lasting>);

impl Spare {
    fn record(&self) -> &Lasting {
        self.0.as_ref().expect("a spare is taken once")
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.record().process.pid
    }

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

/// A spare recorded for the GPU of `env` that can become a worker under `env`, a ready one where there
/// is one, its record removed; each one met that cannot is ended, and `say` is told why.
pub fn take(repo: &Repo, env: &WorkerEnv, say: &dyn Fn(String)) -> Result<Option<Spare>> {
    Ok(Records::of(repo, env.gpu.as_deref())?.take_soonest(env, say))
}

/// Whether `spare` has imported, made its GPU context and started its profiler: given a command now,
/// it pays only the worker's configuration and collection.
fn is_ready(spare: &Lasting) -> bool {
    spare.channel().join(SPARE_READY).exists()
}

/// The spares a step starts for one GPU as its rounds begin: owned by the step's process (they end with
/// it) and recorded nowhere until [`keep`] keeps those left for the next step. The rounds' later
/// workers are made of them, the ready ones first, then the oldest.
pub struct Pool {
    /// The workers' environment on that GPU: a spare that cannot serve under it is ended.
    env: WorkerEnv,
    /// What the spares import ahead: the modules the baseline's worker loaded from outside its tree.
    preload: Option<Vec<u8>>,
    /// In the order they started. The sides of the GPU's pair take from it in turn.
    started: Mutex<VecDeque<Spare>>,
}

impl Pool {
    /// Spares for the workers `env` describes, importing ahead what the worker whose channel is `like`
    /// loaded, beginning with `spares`.
    pub fn new(env: WorkerEnv, like: &Path, spares: Vec<Spare>) -> Pool {
        Pool {
            env,
            preload: std::fs::read(like.join(MODULES)).ok(),
            started: Mutex::new(spares.into()),
        }
    }

    fn started(&self) -> std::sync::MutexGuard<'_, VecDeque<Spare>> {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many it holds.
    pub fn held(&self) -> usize {
        self.started().len()
    }

    /// Starts one more in `home`, its output into `log`; returns its pid.
    pub fn start(&self, home: &Path, log: &Path) -> Result<u32> {
        let spare = start(&self.env, self.preload.as_deref(), home, log)?;
        let pid = spare.pid();
        self.started().push_back(spare);
        Ok(pid)
    }

    /// A spare that is ready and can serve, if there is one; each met that cannot is ended.
    pub fn take_ready(&self) -> Option<Spare> {
        self.take_first(is_ready)
    }

    /// A ready spare, else the oldest still starting: either is ahead of a fresh worker.
    pub fn take(&self) -> Option<Spare> {
        self.take_ready().or_else(|| self.take_first(|_| true))
    }

    fn take_first(&self, wanted: impl Fn(&Lasting) -> bool) -> Option<Spare> {
        let mut started = self.started();
        // one that cannot serve (it ended by itself) is dropped, which ends it
        started.retain(|spare| spare.record().cannot_take(&self.env).is_none());
        let index = started.iter().position(|spare| wanted(spare.record()))?;
        started.remove(index)
    }

    /// Whether a spare is still starting: it is ready sooner than a worker started now would be.
    pub fn starting(&self) -> bool {
        (self.started().iter())
            .map(Spare::record)
            .any(|spare| spare.process.alive() && !is_ready(spare))
    }

    /// The pids of its spares: the step's own processes on the GPU.
    pub fn pids(&self) -> Vec<u32> {
        self.started().iter().map(Spare::pid).collect()
    }

    /// Its spares, for [`keep`]; it holds none after.
    pub fn take_all(&self) -> Vec<Spare> {
        self.started().drain(..).collect()
    }
}

/// Records `spares` for the next step beside those recorded already for the GPU of `env`, as many as
/// fit among the [`MOST_SPARES`] (the others end), and leaves every one recorded running past this
/// process.
pub fn keep(repo: &Repo, env: &WorkerEnv, spares: Vec<Spare>) -> Result<()> {
    let records = Records::of(repo, env.gpu.as_deref())?;
    let taken: Vec<usize> = records.each().map(|(index, _)| index).collect();
    let free = (0..MOST_SPARES).filter(|index| !taken.contains(index));
    for (index, spare) in free.zip(spares) {
        let record = spare.into_record();
        if let Err(e) = lasting::save(&records.paths[index], &record) {
            end(&record);
            return Err(e);
        }
    }
    for (_, spare) in records.each() {
        let _ = std::fs::remove_file(spare.channel().join(OWNER));
    }
    Ok(())
}

/// Ends every spare recorded for `gpu`; returns their pids.
pub fn end_all(repo: &Repo, gpu: Option<&str>) -> Result<Vec<u32>> {
    let records = Records::of(repo, gpu)?;
    let mut ended = Vec::new();
    for (index, spare) in records.each() {
        end(&spare);
        ended.push(spare.process.pid);
        let _ = std::fs::remove_file(&records.paths[index]);
    }
    Ok(ended)
}

/// Starts a spare for the workers `env` describes in `home`, importing ahead the modules `preload`
/// names, its output into `log`. It ends with this process, or when dropped, unless [`keep`] keeps it.
pub fn start(env: &WorkerEnv, preload: Option<&[u8]>, home: &Path, log: &Path) -> Result<Spare> {
    let channel = lasting::channel_in(home, 0);
    std::fs::create_dir_all(&channel)
        .with_context(|| format!("cannot create {}", channel.display()))?;
    // it ends with this process until [`Pool::keep`]: a step stopped midway leaves none behind
    own(&channel)?;
    // a worker that wrote none (an older one) leaves the spare its torch alone
    if let Some(preload) = preload {
        write_whole(&channel.join(PRELOAD), preload)?;
    }
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
    Ok(Spare(Some(record)))
}
