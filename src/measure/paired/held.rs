//! A side's code and the warm worker that runs from it: obtained for the rounds ([`hold`]), and kept
//! past the step as the next one's baseline or ended with the loop.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};

use super::Settings;
use super::dumps_of;
use crate::features::code_tree::CodeTree;
use crate::record::history::sandbox;
use crate::rules::decision::Decision;
use crate::system::git::Repo;
use crate::system::pytest::Pytest;
use crate::system::runner::Workers;
use crate::system::ui::Progress;
use crate::system::workers::lasting::{self, Code, Lasting, WorkerEnv};
use crate::system::workers::spare::{self, Pool, Spare};
use crate::system::workers::{Worker, say_cold};

/// One side's code and the warm worker that runs from it: a worktree of its own (never the user's
/// work tree, which they edit next) that lives exactly as long as the worker, past the step too.
pub struct Held<'a> {
    /// Declared first: the worker ends before its tree is removed.
    pub worker: Option<Worker>,
    pub tree: CodeTree<'a>,
    pub code: Code,
    pub env: WorkerEnv,
    /// Whether its worker may outlive the command ([`Workers::Lasting`]).
    workers: Workers,
    /// Spares the step started on its GPU that no round took: kept with its worker for the next step,
    /// else they end with it.
    pub spares: Vec<Spare>,
}

/// Where a side's code and worker come from: `side` (`baseline` or `candidate`) holding `code`, run
/// by `template` (its root and sandbox replaced), with workers where its runner runs them, on the GPU
/// `env` names.
pub struct Wanted<'t> {
    pub side: &'static str,
    pub code: Code,
    pub env: WorkerEnv,
    pub template: &'t Pytest<'t>,
}

/// One side's code and worker: for the baseline, the worker kept for this GPU when everything it
/// depends on still holds and its channel answers (anything else ends it, said once); otherwise a
/// fresh worktree and a fresh worker. The one place a side's worker is obtained.
pub fn hold<'a>(repo: &'a Repo, wanted: Wanted) -> Result<Held<'a>> {
    let progress = wanted.template.progress;
    let workers = wanted.template.place.workers();
    if workers == Workers::Lasting
        && wanted.side == "baseline"
        && let Some((record, kept)) = lasting::kept(repo, wanted.env.gpu.as_deref())?
    {
        let tree = CodeTree::adopt(repo, &kept.home);
        let _ = std::fs::remove_file(&record);
        // between commands its tree is anybody's to write: it serves only as committed
        let adopted = match (kept.cannot_serve(&wanted.code, &wanted.env))
            .or_else(|| tree.changed())
            .or_else(|| kept.imported_changed())
        {
            Some(why) => Err(why),
            None => Worker::adopt(&kept, wanted.side),
        };
        match adopted {
            Ok(worker) => {
                progress.line(&format!(
                    "the baseline runs in the warm worker (pid {}) an earlier command kept",
                    worker.pid()
                ));
                return Ok(Held {
                    worker: Some(worker),
                    tree,
                    code: wanted.code,
                    env: wanted.env,
                    workers,
                    spares: Vec::new(),
                });
            }
            Err(why) => {
                progress.line(&format!(
                    "the kept worker (pid {}) cannot serve this step ({why}): it is ended and a fresh \
                     one starts",
                    kept.process.pid
                ));
                kept.end_process();
                drop(tree);
            }
        }
    }
    let home = new_home(repo, wanted.side)?;
    let started = Instant::now();
    let tree = CodeTree::in_home(repo, &home, &wanted.code.commit)?;
    progress.line(&format!(
        "the {}'s code checked out beside the work tree in {} ms",
        wanted.side,
        started.elapsed().as_millis()
    ));
    let worker = match workers.warm() {
        false => None,
        true => {
            // the dumps name the worktree they were compiled from: only this worker's are read (and
            // only where the template asks for dumps: the first GPU's workers)
            let dumps = wanted
                .template
                .dumps
                .as_ref()
                .map(|_| dumps_of(repo, &wanted.code.tree));
            if let Some(dumps) = &dumps {
                let _ = std::fs::remove_dir_all(dumps);
            }
            let runner = Pytest {
                root: &tree.path,
                dumps,
                ..wanted.template.clone()
            };
            // the candidate's code is new: a spare the last step started has all but its collection
            let spare = match workers == Workers::Lasting && wanted.side == "candidate" {
                true => spare::take(repo, &wanted.env, &|line| progress.line(&line))?,
                false => None,
            };
            match Worker::start(&runner, wanted.side, &home, spare) {
                Ok(worker) => {
                    if worker.made_of_spare() {
                        progress.line(&format!(
                            "the {}'s worker is the spare (pid {}) started after the last step, its \
                             interpreter, imports and GPU context ready",
                            wanted.side,
                            worker.pid()
                        ));
                    }
                    Some(worker)
                }
                Err(e) => {
                    say_cold(&runner, wanted.side, &format!("{e:#}"));
                    None
                }
            }
        }
    };
    Ok(Held {
        worker,
        tree,
        code: wanted.code,
        env: wanted.env,
        workers,
        spares: Vec::new(),
    })
}

impl Held<'_> {
    /// Whether its worker may outlive the command.
    pub fn workers(&self) -> Workers {
        self.workers
    }

    /// Leaves its worker and tree running past this command as the baseline's, holding `commit` (the
    /// new baseline's, whose tree this one's code is), recorded for the next step to adopt, and says
    /// so. Past `deadline` (the budget ends every process group of the command), or where it cannot be
    /// kept (gone, cold, no identity), both end now; that is no error: the next step starts a fresh one.
    pub fn keep_as_baseline(
        mut self,
        repo: &Repo,
        commit: &str,
        deadline: Instant,
        progress: &Progress,
    ) {
        // a worker that ends with the place (a Slurm job) ends here too
        let Some(worker) = (self.worker.take())
            .filter(|_| self.workers == Workers::Lasting && Instant::now() < deadline)
        else {
            return;
        };
        let pid = worker.pid();
        let code = Code {
            commit: commit.to_string(),
            ..self.code.clone()
        };
        let Some(record) = worker.keep("baseline", code, self.env.clone()) else {
            return;
        };
        let saved = lasting::record_path(repo, self.env.gpu.as_deref())
            .and_then(|path| lasting::save(&path, &record));
        match saved {
            Ok(()) => {
                self.tree.kept = true;
                progress.line(&format!(
                    "the baseline's warm worker (pid {pid}) lives on for the next step"
                ));
                let count = Settings::for_workers(self.workers).spares;
                let started = std::mem::take(&mut self.spares);
                start_spares(repo, (&self.env, &record), (count, started), progress);
            }
            Err(e) => {
                // unrecorded, it would be nobody's: it ends with its tree
                record.end_process();
                progress.line(&format!(
                    "warning: the baseline's worker could not be kept for the next step: {e:#}"
                ));
            }
        }
    }
}

/// The sides holding the new baseline's code after a step, one per GPU.
pub struct Holders<'a>(pub Vec<Held<'a>>);

impl Holders<'_> {
    /// The tree of the code they hold: the new baseline's.
    pub fn tree(&self) -> Option<&str> {
        self.0.first().map(|held| held.code.tree.as_str())
    }

    /// Ends their workers and the spares the step started, and says so where one was warm: the loop has
    /// halted (`decision`), and until the user says `--continue` none should idle on a GPU that others
    /// may want.
    pub fn end_with_the_loop(self, decision: Decision, progress: &Progress) {
        // one that ends with its place anyway (a Slurm job's) goes unsaid
        let pids: Vec<String> = (self.0.iter())
            .filter(|held| held.workers == Workers::Lasting)
            .filter_map(|held| held.worker.as_ref())
            .map(|worker| worker.pid().to_string())
            .collect();
        if !pids.is_empty() {
            progress.line(&format!(
                "the loop halted ({decision}): the baseline's warm worker (pid {}) ends with it; `step --continue` starts a fresh one",
                pids.join(", ")
            ));
        }
    }

    /// Keeps each GPU's worker as the baseline's for the next step ([`Held::keep_as_baseline`]).
    pub fn keep_as_baseline(
        self,
        repo: &Repo,
        commit: &str,
        deadline: Instant,
        progress: &Progress,
    ) {
        for held in self.0 {
            held.keep_as_baseline(repo, commit, deadline, progress);
        }
    }
}

/// Starts spares into `pool` until it holds `count`; returns the pids of those it started. One that
/// cannot start ends the top-up: the workers it would have made start as themselves.
pub(super) fn top_up_spares(repo: &Repo, pool: &Pool, count: usize) -> Result<Vec<u32>> {
    let mut pids = Vec::new();
    for _ in pool.held()..count {
        let home = new_home(repo, spare::SPARE)?;
        let name = home.file_name().unwrap_or_default().to_string_lossy();
        let log = sandbox(repo).join(format!("worker-{name}.log"));
        let pid = pool.start(&home, &log).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&home);
        })?;
        pids.push(pid);
    }
    Ok(pids)
}

/// Keeps `count` spares for the next step's workers: those the step `started` that no round took, and
/// as many more started now, like the kept worker `like`, in place of those an earlier command left. A
/// spare that cannot start is a warning, since the next step starts its workers as before.
fn start_spares(
    repo: &Repo,
    (env, like): (&WorkerEnv, &Lasting),
    (count, started): (usize, Vec<Spare>),
    progress: &Progress,
) {
    let _ = spare::end_all(repo, env.gpu.as_deref());
    let pool = Pool::new(env.clone(), &like.channel(), started);
    let topped_up = top_up_spares(repo, &pool, count);
    let kept = spare::keep(repo, env, pool.take_all());
    let started = topped_up.and_then(|pids| kept.map(|()| pids));
    say_started(progress, started, "get ready", "for the next step");
}

/// Says which spares `started` (`what` they do), or why none could, for `whom`.
pub(super) fn say_started(progress: &Progress, started: Result<Vec<u32>>, what: &str, whom: &str) {
    match started {
        Ok(pids) if pids.is_empty() => {}
        Ok(pids) => {
            let pids: Vec<String> = pids.iter().map(u32::to_string).collect();
            progress.line(&format!(
                "spare workers (pid {}) {what} {whom}",
                pids.join(", ")
            ));
        }
        Err(e) => progress.line(&format!("warning: no spare workers {whom}: {e:#}")),
    }
}

/// Removes the bytecode that the worker kept for `gpu` may have left in its tree between commands
/// ([`CodeTree::clear_bytecode`]), before any code of the step runs.
pub fn clear_kept_bytecode(repo: &Repo, gpu: Option<&str>) -> Result<()> {
    if let Some((_, kept)) = lasting::kept(repo, gpu)? {
        CodeTree::clear_bytecode_in(&kept.home)?;
    }
    Ok(())
}

/// A fresh, empty folder for a side's worker and tree: `cutile-perf/workers/<side>-<pid>-<n>`, where
/// `<pid>` is this process's (so that a later command can tell an orphan by it).
fn new_home(repo: &Repo, side: &str) -> Result<PathBuf> {
    let dir = repo.git_path(lasting::WORKERS_DIR)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for n in 0.. {
        let home = dir.join(format!("{side}-{}-{n}", std::process::id()));
        match std::fs::create_dir(&home) {
            Ok(()) => return Ok(home),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", home.display())),
        }
    }
    unreachable!("an unbounded range")
}

/// Ends every kept worker (its process group, its tree and its record); returns their pids.
pub fn end_kept_workers(repo: &Repo) -> Result<Vec<u32>> {
    let mut ended = Vec::new();
    for (path, kept) in lasting::all(repo)? {
        kept.end_process();
        drop(CodeTree::adopt(repo, &kept.home));
        let _ = std::fs::remove_file(&path);
        ended.push(kept.process.pid);
    }
    Ok(ended)
}
