//! A step's side: its warm worker where it has one (redrawn each round, the next one standing by, held
//! while the other side measures), else a process per run.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::channel::{HELD, StartUp};
use super::spare::{Pool, Spare};
use super::worker::StandBy;
use super::{Served, Worker};
use crate::rules::records::Statistic;
use crate::system::disk::write_whole;
use crate::system::pytest::{BenchmarkRun, Bytecode, CorrectnessRun, Pytest, Recorded};
use crate::system::runner::Workers;

/// One side's way of running the benchmark in a step: its warm worker, or a process per run.
pub struct Side<'a> {
    pub runner: &'a Pytest<'a>,
    worker: Option<Worker>,
    /// The next rounds' workers, started ahead of them ([`Side::stand_by`]), the next round's first.
    standby: VecDeque<Worker>,
    /// The pids of the workers [`Side::redraw`] ended: nvidia-smi may list one a moment longer, as ours.
    retired: Vec<u32>,
    /// The start-ups of the workers that served it so far, in the order they served.
    start_ups: Vec<StartUp>,
    /// How long its last run waited for its worker to be ready.
    waited: Duration,
    /// Bytecode found in its tree as a later worker was about to start there (which removes it first),
    /// with the tree's path: put there during the step, by another side's code.
    planted: Option<String>,
    /// Spares the last step started, for its next new workers (the next rounds'), in order; those left
    /// end with the side.
    spares: VecDeque<Spare>,
    /// The spares its GPU's rounds start as they begin: its new workers once `spares` are spent.
    pool: Option<&'a Pool>,
}

impl<'a> Side<'a> {
    /// A side that runs a process per benchmark run.
    pub fn cold(runner: &'a Pytest<'a>) -> Side<'a> {
        Side::new(runner, None)
    }

    /// A side served by `worker` where there is one, else a process per run.
    pub fn new(runner: &'a Pytest<'a>, worker: Option<Worker>) -> Side<'a> {
        Side {
            runner,
            worker,
            standby: VecDeque::new(),
            retired: Vec::new(),
            start_ups: Vec::new(),
            waited: Duration::ZERO,
            planted: None,
            spares: VecDeque::new(),
            pool: None,
        }
    }

    /// The side with `spares` for its next new workers, in order, then those of `pool`.
    pub fn with_spares(mut self, spares: Vec<Spare>, pool: Option<&'a Pool>) -> Side<'a> {
        self.spares = spares.into();
        self.pool = pool;
        self
    }

    /// The spare the side's next new worker is made of: one the last step started, else one of the pool
    /// that is ready, else (`unready`) one of the pool still starting.
    fn next_spare(&mut self, unready: bool) -> Option<Spare> {
        if let Some(spare) = self.spares.pop_front() {
            return Some(spare);
        }
        let pool = self.pool?;
        match unready {
            false => pool.take_ready(),
            true => pool.take(),
        }
    }

    /// Whether a worker started ahead now would be ready later than a spare of the pool still starting:
    /// it then waits for one to be ready, or for its round.
    fn a_spare_comes(&self) -> bool {
        self.spares.is_empty() && self.pool.is_some_and(Pool::starting)
    }

    /// Bytecode put in the side's tree during the step, found as a later worker was about to start
    /// there (which removes it before it imports): the worker before may have loaded it.
    pub fn planted(&self) -> Option<&str> {
        self.planted.as_deref()
    }

    /// Notes any bytecode in the side's tree before a worker starts there and removes it.
    fn look_for_planted(&mut self) {
        if self.planted.is_some() {
            return;
        }
        self.planted = match Bytecode::in_tree(self.runner.root) {
            Ok(paths) if paths.is_empty() => None,
            Ok(paths) => Some(format!(
                "{}: {}",
                self.runner.root.display(),
                paths.join(", ")
            )),
            Err(e) => Some(format!(
                "{}: cannot list its bytecode: {e:#}",
                self.runner.root.display()
            )),
        };
    }

    /// The start-ups of the workers that served it so far.
    pub fn start_ups(&self) -> &[StartUp] {
        &self.start_ups
    }

    /// Signals the workers standing by for rounds that did not come to end, without waiting for them:
    /// [`Side::end_standing_by`] then waits for every side's at once.
    pub fn begin_ending_standing_by(&self) {
        for standby in &self.standby {
            standby.process.begin_ending();
        }
    }

    /// Ends the workers standing by for rounds that did not come, with their logs (they served nothing
    /// a reason could name); returns how many there were.
    pub fn end_standing_by(&mut self) -> usize {
        self.begin_ending_standing_by();
        let mut ended = 0;
        while let Some(standby) = self.standby.pop_front() {
            self.retired.extend(standby.pids());
            let log = standby.log.clone();
            drop(standby);
            let _ = std::fs::remove_file(log);
            ended += 1;
        }
        ended
    }

    /// How long its last run waited for its worker's start-up (none for a process of its own, whose
    /// start-up is inside its run).
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Its worker, if it is still warm.
    pub fn into_worker(mut self) -> Option<Worker> {
        self.worker.take()
    }

    /// Starts the workers of the side's next `rounds` [`Side::redraw`]s now, those not standing by yet,
    /// in its worker's home (each in a channel of its own), so that their imports and collection run
    /// while this round measures (or, started as the step begins, beside correctness and the first
    /// workers' start-ups) and while later rounds wait for their start-ups (held, as the side's
    /// worker is, while the other side measures); each makes its GPU context only when its redraw lets it
    /// go, or, `at_once`, as soon as it has collected, beside this side's measurement. Each is made of a
    /// spare where one is ready; while one of the pool is still starting, no worker starts as itself:
    /// a later call, or the round's redraw, makes it of that spare. Nothing for a side without a worker;
    /// one that cannot start leaves its redraw to start it.
    pub fn stand_by(&mut self, rounds: usize, at_once: bool) {
        let Some(worker) = &self.worker else {
            return;
        };
        let Some(home) = worker.channel.parent().map(Path::to_path_buf) else {
            return;
        };
        let side = worker.side;
        let why = match at_once {
            true => StandBy::AheadGoing,
            false => StandBy::Ahead,
        };
        while self.standby.len() < rounds {
            self.look_for_planted();
            // the first channel of the home that no worker of the side holds
            let taken: Vec<u8> = (self.worker.iter().chain(&self.standby))
                .map(|worker| worker.slot)
                .collect();
            let slot = (0..=u8::MAX).find(|slot| !taken.contains(slot));
            let spare = self.next_spare(false);
            if spare.is_none() && self.a_spare_comes() {
                return;
            }
            match slot.and_then(|slot| {
                Worker::spawn(self.runner, side, &home, slot, Some(why), spare).ok()
            }) {
                Some(worker) => self.standby.push_back(worker),
                None => return,
            }
        }
    }

    /// Ends the side's worker, if it has one, and puts a fresh one in its place (the one standing by, if
    /// any), still standing by: a new process draws again what a process fixes once (an autotuner's pick
    /// among near ties, where its arrays land), which repetitions inside one process never sample. It makes
    /// its GPU context when [`Side::let_go`] lets it: after every old worker of the round has ended, so
    /// that no context is made beside an old one being torn down. A side without a worker makes a process
    /// per run anyway.
    pub fn redraw(&mut self) {
        let Some(worker) = self.worker.take() else {
            return;
        };
        let side = worker.side;
        let home = worker.channel.parent().map(Path::to_path_buf);
        self.retired.extend(worker.pids());
        // the old process group ends (and its channel goes) before the new worker takes the home
        drop(worker);
        if let Some(standby) = self.standby.pop_front() {
            self.worker = Some(standby);
            return;
        }
        let Some(home) = home else {
            return say_cold(self.runner, side, "the worker's folder is gone");
        };
        self.look_for_planted();
        let spare = self.next_spare(true);
        match Worker::spawn(
            self.runner,
            side,
            &home,
            0,
            Some(StandBy::ForThisRound),
            spare,
        ) {
            Ok(worker) => self.worker = Some(worker),
            Err(e) => say_cold(self.runner, side, &format!("{e:#}")),
        }
    }

    /// Whether the worker standing by for the side's next round has said it is ready: that round then
    /// waits for no start-up.
    pub fn next_is_ready(&self) -> bool {
        self.standby.front().is_some_and(Worker::is_ready)
    }

    /// Lets every worker standing by for a later round go on now: each makes its GPU context and warms
    /// up, then waits, ready, for its round. One that cannot be let go is ended; its round starts another.
    pub fn let_go_ahead(&mut self) {
        let mut retired = Vec::new();
        self.standby.retain_mut(|worker| match worker.go() {
            Ok(()) => true,
            Err(_) => {
                retired.extend(worker.pids());
                false
            }
        });
        self.retired.extend(retired);
    }

    /// Lets the side's worker go if it stands by: it makes its GPU context and warms up. One that cannot
    /// be let go is ended: the side turns cold.
    pub fn let_go(&mut self) {
        if let Some(worker) = &mut self.worker
            && let Err(e) = worker.go()
        {
            let side = worker.side;
            self.retired.extend(worker.pids());
            self.worker = None;
            say_cold(self.runner, side, &format!("{e:#}"));
        }
    }

    /// Lets the side's worker go if it stands by ([`Side::let_go`]), and waits for it to be ready (none:
    /// nothing to wait for), so that its start-up (its GPU context among it) is over before either side
    /// measures.
    pub fn ready(&mut self) -> Result<()> {
        self.let_go();
        match &self.worker {
            Some(worker) => worker.await_ready(self.runner.deadline),
            None => Ok(()),
        }
    }

    /// Stops this side's workers (each one's whole process group: the one serving it and those
    /// standing by) until the returned [`Held`] is dropped, while `measuring` measures: no thread of this
    /// side's code (one a candidate's module started at import, say) can put work on the GPU or the CPUs
    /// under the other's measurement. Only workers on this machine are held: a Slurm node's are beyond
    /// this process's signals.
    pub fn hold_while(&self, measuring: &Side) -> Result<Held> {
        if self.runner.place.workers() != Workers::Lasting {
            return Ok(Held::default());
        }
        // an ended group's number may be another process's by now
        let groups: Vec<libc::pid_t> = (self.worker.iter().chain(&self.standby))
            .filter(|worker| worker.process.ended().is_none())
            .map(|worker| worker.pid() as libc::pid_t)
            .collect();
        if groups.is_empty() {
            return Ok(Held::default());
        }
        // should this process be killed while they are held, the measuring worker's watch lets them go on
        let note = match &measuring.worker {
            Some(measuring) => {
                let note = measuring.channel.join(HELD);
                let named: Vec<String> = groups.iter().map(ToString::to_string).collect();
                write_whole(&note, named.join(" "))?;
                Some(note)
            }
            None => None,
        };
        // a failed stop leaves that group as it is
        let stopped = groups
            .into_iter()
            .filter(|&group| unsafe { libc::killpg(group, libc::SIGSTOP) } == 0)
            .collect();
        Ok(Held {
            groups: stopped,
            note,
        })
    }

    /// The pids of the side's workers, the one serving it and those it ended: none of them is another
    /// process on the GPU.
    pub fn worker_pids(&self) -> impl Iterator<Item = u32> + '_ {
        (self.worker.iter().chain(&self.standby))
            .flat_map(Worker::pids)
            .chain(self.retired.iter().copied())
    }

    /// One benchmark run of this side (of `cases` only, when given), `label` on the terminal: a warm
    /// repetition, or a process of its own when the side is cold or turns cold now (said once, with why).
    pub fn benchmark(
        &mut self,
        statistic: Statistic,
        label: &str,
        cases: Option<&[String]>,
    ) -> Result<Recorded<BenchmarkRun>> {
        let served = match self.worker.as_mut() {
            Some(worker) => worker.repeat(self.runner, statistic, label, cases)?,
            None => Served::Cold(String::new()),
        };
        match self.served(served) {
            Some(run) => Ok(run),
            None => self.runner.benchmark(statistic, label, cases),
        }
    }

    /// The correctness selection of this side (the usual inputs), in its worker where it is warm.
    pub fn correctness(&mut self) -> Result<Recorded<CorrectnessRun>> {
        let served = match self.worker.as_mut() {
            Some(worker) => worker.correctness(self.runner, "correctness", "correctness", 0)?,
            None => Served::Cold(String::new()),
        };
        match self.served(served) {
            Some(run) => Ok(run),
            None => self.runner.correctness(),
        }
    }

    /// The correctness selection with every seed shifted by `offset`, into run `name`, in this side's
    /// worker where it is warm.
    pub fn unseen_correctness(
        &mut self,
        name: &str,
        offset: u32,
    ) -> Result<Recorded<CorrectnessRun>> {
        let served = match self.worker.as_mut() {
            Some(worker) => worker.correctness(self.runner, name, "unseen inputs", offset)?,
            None => Served::Cold(String::new()),
        };
        match self.served(served) {
            Some(run) => Ok(run),
            None => self.runner.unseen_correctness(name, offset),
        }
    }

    /// What the worker served; `None` when the run is to be made in a process of its own (the worker
    /// turning cold now is said, and it is gone).
    fn served<T>(&mut self, served: Served<T>) -> Option<T> {
        self.waited = Duration::ZERO;
        if let Some(worker) = self.worker.as_mut() {
            self.waited = worker.waited;
            self.start_ups.extend(worker.start_up.take());
        }
        match served {
            Served::Ran(run) => Some(run),
            Served::Cold(why) => {
                if let Some(worker) = self.worker.take() {
                    say_cold(self.runner, worker.side, &why);
                }
                // a side that turned cold runs a process per run from now on: its next workers go too
                self.end_standing_by();
                None
            }
        }
    }
}

impl Drop for Side<'_> {
    fn drop(&mut self) {
        self.end_standing_by();
    }
}

/// A side's worker stopped while the other side measures ([`Side::hold_while`]); dropped, it goes on.
#[derive(Default)]
#[must_use]
pub struct Held {
    groups: Vec<libc::pid_t>,
    /// The measuring worker's note of the group.
    note: Option<PathBuf>,
}

impl Drop for Held {
    fn drop(&mut self) {
        for &group in &self.groups {
            unsafe {
                libc::killpg(group, libc::SIGCONT);
            }
        }
        if let Some(note) = &self.note {
            let _ = std::fs::remove_file(note);
        }
    }
}

/// Says once that `side` runs a process per run from now on, and why.
pub fn say_cold(runner: &Pytest, side: &str, why: &str) {
    runner.progress.line(&format!(
        "the {side} side cannot be kept warm ({why}): one pytest process per run from now on"
    ));
}
