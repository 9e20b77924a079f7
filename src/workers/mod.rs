//! Warm workers: one pytest process per side of a step that collects the correctness and perf selections
//! once and runs them on the tool's command, so that the candidate's correctness, the first paired round
//! and the unseen-input checks share one start-up (imports, collection, the CUDA context, the
//! kernels' compile and tuning), and the baseline's worker serves the next step ([`lasting`]). Each round
//! after the first runs in a fresh pair ([`Side::redraw`]): repetitions inside one process never sample
//! again what it fixed once, so they are not independent rounds. From round 2 on, the pair of the round
//! after starts while a round measures ([`Side::stand_by`]) and waits, collected, for its turn to make its
//! GPU context: held like the side it will serve while the other side measures, so a candidate's code
//! never runs under the baseline's measurement.
//!
//! The worker is pytest with the plugin `cutile_perf_worker.py`; the channel is a directory in the git dir
//! (the plugin's docstring describes it). Each command writes the same JUnit file, with the same records
//! and census, that a run of its own would write, and is read the same way, once ([`Finished`]). Where a
//! suite cannot be kept warm (pytest-xdist, a test that exits the process, a repetition that breaks where
//! the first one worked), the side falls back to one process per run, and the step says so once.

pub mod lasting;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::process::{self, Background, Ending};
use crate::process_identity::ProcessIdentity;
use crate::pytest::{
    self, BENCHMARK_RECORD, BENCHMARK_SELECTION, BenchmarkRun, CASES_PLUGIN, CENSUS_PLUGIN,
    CORRECTNESS_SELECTION, CorrectnessRun, Finished, Pytest, RECORD_FORMAT, Recorded, SEEDS_PLUGIN,
};
use crate::records::Statistic;
use crate::runner::{PytestRun, Workers};
use lasting::{Code, Lasting, WorkerEnv};

/// The pytest plugin a worker loads: the repetition loop and its channel.
pub const WORKER_PLUGIN: (&str, &str) =
    ("cutile_perf_worker", include_str!("cutile_perf_worker.py"));

/// The worker's option naming its channel, as its command line carries it.
const CHANNEL_OPTION: &str = "--cutile-perf-worker=";
/// How often the tool looks for the worker's answer (a repetition takes seconds).
const POLL: Duration = Duration::from_millis(20);
/// How long a kept worker gets to answer a command that runs nothing, before it is reused.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// One warm pytest process holding one side's code.
pub struct Worker {
    /// `candidate` or `baseline`.
    pub side: &'static str,
    channel: PathBuf,
    process: Background,
    log: PathBuf,
    /// Seconds since the epoch at its start, and at its last command.
    started: u64,
    last_command: u64,
    /// Commands given so far.
    commands: u32,
    /// Whether a repetition has been measured: a crash after one is the worker's, not the code's.
    measured: bool,
    /// Left running for a later command: dropping it ends nothing.
    kept: bool,
    /// Whether its channel is its home's second one ([`lasting::channel_in`]).
    alternate: bool,
    /// Set while it stands by: it has imported and collected, and makes its GPU context when let go.
    standing_by: Option<StandBy>,
    /// When this process started it (none for one adopted from an earlier command): its first command
    /// says how long its start-up took, the cost a warm worker saves the next time.
    spawned: Option<std::time::SystemTime>,
}

/// Why a worker stands by, which says where its start-up is counted from when it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StandBy {
    /// Started while an earlier round measured: what it took then was hidden, counted from its go.
    Ahead,
    /// Started for the round about to measure: nothing hid it, counted from its start.
    ForThisRound,
}

/// What the worker wrote when a command was over.
#[derive(Deserialize)]
struct Done {
    failed: u32,
    ran: u32,
}

/// One command to a worker: the cases of `selection` (only those of `cases`, JUnit ids, when given) into
/// `<name>.xml`, every seed the tests set shifted by `seed_offset` (0: none).
struct Command<'a> {
    name: &'a str,
    selection: &'a str,
    cases: Option<&'a [String]>,
    seed_offset: u32,
}

/// What a command to a worker gave: a run read as a process's would be, or why the worker cannot serve
/// (then the run is made in a process of its own).
pub enum Served<T> {
    Ran(T),
    Cold(String),
}

impl Worker {
    /// Starts `runner`'s side as a worker with its channel in `home`, owned by this process; it
    /// collects while the caller goes on.
    pub fn start(runner: &Pytest, side: &'static str, home: &Path) -> Result<Worker> {
        Worker::spawn(runner, side, home, false, None)
    }

    /// Starts a worker in the `alternate` channel of `home` (beside one in the other), standing by when
    /// `standby` says why: it imports and collects, then waits for [`Worker::go`] before it makes its GPU
    /// context and says `ready`, so that it can start while another worker measures, and so that a
    /// round's new workers make their contexts one after the other, in the round's order.
    fn spawn(
        runner: &Pytest,
        side: &'static str,
        home: &Path,
        alternate: bool,
        standby: Option<StandBy>,
    ) -> Result<Worker> {
        let channel = lasting::channel_in(home, alternate);
        if channel.exists() {
            std::fs::remove_dir_all(&channel)
                .with_context(|| format!("cannot empty {}", channel.display()))?;
        }
        std::fs::create_dir_all(&channel)
            .with_context(|| format!("cannot create {}", channel.display()))?;
        if standby.is_some() {
            write_text_whole(&channel.join(STANDBY), "")?;
        }
        // a worker on another machine (a Slurm job's node) cannot see this process: the job's end ends it
        if runner.place.workers() == Workers::Lasting {
            own(&channel)?;
        }
        // its own plugin folder: two workers start at once, and a kept one outlives the sandbox's files
        let plugins = Pytest {
            sandbox: home.to_path_buf(),
            ..runner.clone()
        }
        .plugin_dir()?;
        let [p, census] = pytest::write_plugin(&plugins, CENSUS_PLUGIN)?;
        let [q, seeds] = pytest::write_plugin(&plugins, SEEDS_PLUGIN)?;
        let [r, worker] = pytest::write_plugin(&plugins, WORKER_PLUGIN)?;
        // the worker picks a round's cases by the ids this plugin gives
        pytest::write_plugin(&plugins, CASES_PLUGIN)?;
        let channel_arg = format!("{CHANNEL_OPTION}{}", channel.display());
        // its log outlives its home: a crash's reason names it
        let name = format!(
            "worker-{}{}",
            home.file_name().unwrap_or_default().to_string_lossy(),
            if alternate { ".1" } else { "" }
        );
        let prepared = runner.prepare(
            PytestRun::Worker,
            &name,
            // in parentheses: the session's filter is added with `and`, which binds tighter than `or`
            &format!("(({CORRECTNESS_SELECTION}) or ({BENCHMARK_SELECTION}))"),
            &[
                BENCHMARK_RECORD,
                &p,
                &census,
                &q,
                &seeds,
                &r,
                &worker,
                &channel_arg,
            ],
            Some(&plugins),
        )?;
        let expression = prepared.with_call(|call| runner.place.pytest_command(call));
        let process = Background::start(expression, &prepared.log)?;
        Ok(Worker {
            side,
            channel,
            process,
            log: prepared.log.clone(),
            started: lasting::now_s(),
            last_command: lasting::now_s(),
            commands: 0,
            measured: false,
            kept: false,
            alternate,
            standing_by: standby,
            spawned: Some(std::time::SystemTime::now()),
        })
    }

    /// Lets a worker standing by go on: it makes its GPU context and says `ready`. Its start-up is
    /// counted from now when an earlier round hid the rest of it. Nothing for a worker not standing by.
    fn go(&mut self) -> Result<()> {
        let Some(standby) = self.standing_by.take() else {
            return Ok(());
        };
        let file = self.channel.join(STANDBY);
        std::fs::remove_file(&file).with_context(|| format!("cannot remove {}", file.display()))?;
        if standby == StandBy::Ahead {
            self.spawned = Some(std::time::SystemTime::now());
        }
        Ok(())
    }

    /// The worker `kept` left running, owned by this process from now on as its `side`, if its channel
    /// answers a command that runs nothing; `Err(why)` when it does not (then it is ended).
    pub fn adopt(kept: &Lasting, side: &'static str) -> Result<Worker, String> {
        let channel = kept.channel();
        own(&channel).map_err(|e| format!("{e:#}"))?;
        let mut worker = Worker {
            side,
            channel,
            process: Background::adopt(kept.process.clone()),
            log: kept.log.clone(),
            started: kept.started,
            last_command: kept.last_command,
            commands: kept.commands,
            measured: kept.measured,
            kept: false,
            alternate: kept.alternate,
            standing_by: None,
            spawned: None,
        };
        match worker.answers() {
            Ok(true) => Ok(worker),
            Ok(false) => Err("its channel does not answer".into()),
            Err(e) => Err(format!("{e:#}")),
        }
    }

    /// Leaves the worker running past this process, holding `code` under `env`, as `side`: the record a
    /// later command adopts it from (none where its identity is unknown: it then ends now).
    pub fn keep(mut self, side: &str, code: Code, env: WorkerEnv) -> Option<Lasting> {
        if self.process.ended().is_some() {
            return None;
        }
        let process = self.process.leader()?.clone();
        // no owner: the worker's watch leaves it running after this process is gone
        std::fs::remove_file(self.channel.join(OWNER)).ok()?;
        self.kept = true;
        self.process.keep();
        Some(Lasting {
            process,
            side: side.to_string(),
            code,
            env,
            home: self.channel.parent()?.to_path_buf(),
            log: self.log.clone(),
            started: self.started,
            last_command: self.last_command,
            commands: self.commands,
            measured: self.measured,
            alternate: self.alternate,
        })
    }

    /// The worker's pid, also its process group's number.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Its pid, and the pid its pytest wrote as it started where that differs (a Slurm job step: the pid
    /// on the node, which that node's nvidia-smi lists).
    fn pids(&self) -> Vec<u32> {
        let written = std::fs::read_to_string(self.channel.join("pid")).ok();
        let on_its_machine = written
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|ready| ready["pid"].as_u64())
            .and_then(|pid| u32::try_from(pid).ok());
        let mut pids = vec![self.pid()];
        pids.extend(on_its_machine.filter(|&pid| pid != self.pid()));
        pids
    }

    /// Waits until the worker has collected and made its GPU context (`ready`), it turned cold or ended,
    /// or `deadline`: what its next command then finds, it says.
    fn await_ready(&self, deadline: Instant) -> Result<()> {
        self.wait_for(deadline, "ready").map(drop)
    }

    /// Whether the worker answers a command that selects no case, within [`ANSWER_TIMEOUT`].
    fn answers(&mut self) -> Result<bool> {
        let number = self.send(serde_json::json!({
            "junit": self.channel.join("nothing.xml"),
            "select": "cutile_perf_selects_nothing",
            "cases": null,
            "seed_offset": 0,
        }))?;
        let answer = self.wait_for(Instant::now() + ANSWER_TIMEOUT, &format!("done-{number}"))?;
        Ok(matches!(answer, Answer::Arrived(_)))
    }

    /// Writes the next command; returns its number.
    fn send(&mut self, command: serde_json::Value) -> Result<u32> {
        self.commands += 1;
        self.last_command = lasting::now_s();
        write_whole(
            &self.channel.join(format!("run-{}", self.commands)),
            &command,
        )?;
        Ok(self.commands)
    }

    /// One more repetition of the perf selection into `runner`'s `benchmark.xml`, its progress shown as
    /// `label`; `cases` (JUnit ids, `classname::name`) narrows it to those.
    pub fn repeat(
        &mut self,
        runner: &Pytest,
        statistic: Statistic,
        label: &str,
        cases: Option<&[String]>,
    ) -> Result<Served<Recorded<BenchmarkRun>>> {
        let command = Command {
            name: "benchmark",
            selection: BENCHMARK_SELECTION,
            cases,
            seed_offset: 0,
        };
        let finished = match self.command(runner, label, command)? {
            Served::Ran(finished) => finished,
            Served::Cold(why) => return Ok(Served::Cold(why)),
        };
        let run = finished.benchmark(runner, statistic, &self.log);
        Ok(match run.outcome {
            BenchmarkRun::Crash(why) if self.measured => Served::Cold(format!(
                "a repetition broke where the first one worked: {why}"
            )),
            BenchmarkRun::Measured(_) => {
                self.measured = true;
                Served::Ran(run)
            }
            _ => Served::Ran(run),
        })
    }

    /// The correctness selection into `runner`'s `<name>.xml`, with every seed the tests set shifted by
    /// `seed_offset` (0: none).
    pub fn correctness(
        &mut self,
        runner: &Pytest,
        name: &str,
        label: &str,
        seed_offset: u32,
    ) -> Result<Served<Recorded<CorrectnessRun>>> {
        Ok(
            match self.command(
                runner,
                label,
                Command {
                    name,
                    selection: CORRECTNESS_SELECTION,
                    cases: None,
                    seed_offset,
                },
            )? {
                Served::Ran(finished) => Served::Ran(finished.correctness(runner, &self.log)),
                Served::Cold(why) => Served::Cold(why),
            },
        )
    }

    /// Runs the collected cases that `command` picks into `runner`'s `<name>.xml`.
    fn command(
        &mut self,
        runner: &Pytest,
        label: &str,
        command: Command,
    ) -> Result<Served<Finished>> {
        // one standing by that no round let go yet goes now (`start`'s second run)
        self.go()?;
        let started = Instant::now();
        let junit = runner.sandbox.join(RECORD_FORMAT.file_name(command.name));
        match std::fs::remove_file(&junit) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", junit.display()));
            }
            _ => {}
        }
        match self.wait_for(runner.deadline, "ready")? {
            Answer::Arrived(_) => {}
            Answer::Cold(why) => return Ok(Served::Cold(why)),
            Answer::Ended(ending) => return Ok(self.ended(ending)),
        }
        let start_up = self.start_up();
        let number = self.send(serde_json::json!({
            "junit": junit,
            "select": command.selection,
            "cases": command.cases,
            "seed_offset": command.seed_offset,
        }))?;
        let done: Done = match self.wait_for(runner.deadline, &format!("done-{number}"))? {
            Answer::Arrived(text) => serde_json::from_str(&text)
                .with_context(|| format!("the {} worker's answer {text:?}", self.side))?,
            Answer::Cold(why) => return Ok(Served::Cold(why)),
            Answer::Ended(ending) => return Ok(self.ended(ending)),
        };
        runner.progress.line(&format!(
            "{label}: in the warm {} worker, {} cases, {} failed, in {:.1}s{}",
            self.side,
            done.ran,
            done.failed,
            started.elapsed().as_secs_f64(),
            start_up.map_or(String::new(), |took| format!(
                " (its start-up before it: {:.1}s)",
                took.as_secs_f64()
            ))
        ));
        // pytest's own exit codes: 5 when nothing was selected, 1 when a case failed
        let ending = Ending::Exited(match (done.ran, done.failed) {
            (0, _) => 5,
            (_, 0) => 0,
            _ => 1,
        });
        Ok(Served::Ran(Finished::read(ending, &junit)))
    }

    /// How long the worker took from its start to ready (imports, collection), once: on the first command
    /// of a worker this process started.
    fn start_up(&mut self) -> Option<Duration> {
        let spawned = self.spawned.take()?;
        let ready = std::fs::metadata(self.channel.join("ready"))
            .ok()?
            .modified()
            .ok()?;
        ready.duration_since(spawned).ok()
    }

    /// A deadline or an interrupt is the run's ending as for any run; the worker's own end (a test that
    /// exits the process, a crash of the interpreter) makes the side cold, so that a process of its own
    /// shows what the code does.
    fn ended(&self, ending: Ending) -> Served<Finished> {
        let log = self.log.display();
        match ending {
            Ending::TimedOut | Ending::Interrupted => Served::Ran(Finished::unwritten(ending)),
            Ending::Exited(code) => {
                Served::Cold(format!("the worker exited with code {code} (log: {log})"))
            }
            Ending::Signaled(signal) => Served::Cold(format!(
                "the worker was killed by signal {signal} (log: {log})"
            )),
        }
    }

    /// Waits for the file `name` in the channel; the worker's end, `cold`, the deadline or an interrupt
    /// end the wait first.
    fn wait_for(&self, deadline: Instant, name: &str) -> Result<Answer> {
        let path = self.channel.join(name);
        let cold = self.channel.join("cold");
        loop {
            if let Ok(text) = std::fs::read_to_string(&path) {
                return Ok(Answer::Arrived(text));
            }
            if let Ok(text) = std::fs::read_to_string(&cold) {
                let why: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                return Ok(Answer::Cold(
                    why["why"].as_str().unwrap_or(&text).to_string(),
                ));
            }
            if let Some(ending) = self.process.ended() {
                // an answer written just before the end still counts
                if let Ok(text) = std::fs::read_to_string(&path) {
                    return Ok(Answer::Arrived(text));
                }
                return Ok(Answer::Ended(ending));
            }
            if process::interrupted() {
                return Ok(Answer::Ended(Ending::Interrupted));
            }
            if Instant::now() >= deadline {
                return Ok(Answer::Ended(Ending::TimedOut));
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // the process group goes with `process`; the channel is ours alone
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.channel);
        }
    }
}

/// The channel file that names the process owning the worker now (the plugin's watch reads it).
const OWNER: &str = "owner";
/// The channel file naming the other side's workers' process groups, stopped while this one measures.
const HELD: &str = "held";
/// The channel file that keeps a worker started ahead of its round from its GPU context and `ready`.
const STANDBY: &str = "standby";

/// Makes this process the owner of the worker at `channel`: the worker ends when this process does,
/// unless it is kept first.
fn own(channel: &Path) -> Result<()> {
    let me = ProcessIdentity::current().context("cannot read this process's identity in /proc")?;
    write_text_whole(&channel.join(OWNER), &me.to_string())
}

enum Answer {
    Arrived(String),
    Cold(String),
    Ended(Ending),
}

/// Writes `value` as JSON into `path` whole.
fn write_whole(path: &Path, value: &serde_json::Value) -> Result<()> {
    write_text_whole(path, &value.to_string())
}

/// Writes `text` into `path` whole: beside it first, then renamed.
fn write_text_whole(path: &Path, text: &str) -> Result<()> {
    let part = path.with_extension("part");
    std::fs::write(&part, text).with_context(|| format!("cannot write {}", part.display()))?;
    std::fs::rename(&part, path).with_context(|| format!("cannot write {}", path.display()))
}

/// One side's way of running the benchmark in a step: its warm worker, or a process per run.
pub struct Side<'a> {
    pub runner: &'a Pytest<'a>,
    worker: Option<Worker>,
    /// The next round's worker, started ahead of it ([`Side::stand_by`]).
    standby: Option<Worker>,
    /// The pids of the workers [`Side::redraw`] ended: nvidia-smi may list one a moment longer, as ours.
    retired: Vec<u32>,
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
            standby: None,
            retired: Vec::new(),
        }
    }

    /// Its worker, if it is still warm.
    pub fn into_worker(self) -> Option<Worker> {
        self.worker
    }

    /// Starts the worker of the side's next [`Side::redraw`] now, in its worker's home, so that its
    /// imports and collection run while this round measures (held, as the side's worker is, while the
    /// other side measures); it makes its GPU context only when the redraw lets it go. Nothing for a side
    /// without a worker, or one already standing by; one that cannot start leaves the redraw to start it.
    pub fn stand_by(&mut self) {
        let Some(worker) = &self.worker else {
            return;
        };
        if self.standby.is_some() {
            return;
        }
        let Some(home) = worker.channel.parent() else {
            return;
        };
        let alternate = !worker.alternate;
        self.standby = Worker::spawn(
            self.runner,
            worker.side,
            home,
            alternate,
            Some(StandBy::Ahead),
        )
        .ok();
    }

    /// Ends the side's worker, if it has one, and puts a fresh one in its place (the one standing by, if
    /// any), still standing by: a new process draws again what a process fixes once (an autotuner's pick
    /// among near ties, where its arrays land), which repetitions inside one process never sample. It makes
    /// its GPU context when [`Side::ready`] lets it: after every old worker of the round has ended and in
    /// the round's order, so that neither side's context is made beside another's being made or torn
    /// down. A side without a worker makes a process per run anyway.
    pub fn redraw(&mut self) {
        let Some(worker) = self.worker.take() else {
            return;
        };
        let side = worker.side;
        let home = worker.channel.parent().map(Path::to_path_buf);
        self.retired.extend(worker.pids());
        // the old process group ends (and its channel goes) before the new worker takes the home
        drop(worker);
        if let Some(standby) = self.standby.take() {
            self.worker = Some(standby);
            return;
        }
        let Some(home) = home else {
            return say_cold(self.runner, side, "the worker's folder is gone");
        };
        match Worker::spawn(self.runner, side, &home, false, Some(StandBy::ForThisRound)) {
            Ok(worker) => self.worker = Some(worker),
            Err(e) => say_cold(self.runner, side, &format!("{e:#}")),
        }
    }

    /// Lets the side's worker go if it stands by, and waits for it to be ready (none: nothing to wait
    /// for), so that its start-up (its GPU context among it) is over before the other side's begins and
    /// before either measures. One that cannot be let go is ended: the side turns cold.
    pub fn ready(&mut self) -> Result<()> {
        if let Some(worker) = &mut self.worker
            && let Err(e) = worker.go()
        {
            let side = worker.side;
            self.retired.extend(worker.pids());
            self.worker = None;
            say_cold(self.runner, side, &format!("{e:#}"));
        }
        match &self.worker {
            Some(worker) => worker.await_ready(self.runner.deadline),
            None => Ok(()),
        }
    }

    /// Stops this side's workers (each one's whole process group: the one serving it and the one
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
                write_text_whole(&note, &named.join(" "))?;
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
        match served {
            Served::Ran(run) => Some(run),
            Served::Cold(why) => {
                if let Some(worker) = self.worker.take() {
                    say_cold(self.runner, worker.side, &why);
                }
                None
            }
        }
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
