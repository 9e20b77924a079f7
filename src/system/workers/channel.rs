//! The channel: the folder in the git dir through which the tool and a worker talk. The tool writes a
//! command, the worker runs it and writes that it is done (or why it turned cold); the files that name
//! its owner, the groups held while it measures and its standing by live there too.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Deserialize;

use super::Worker;
use super::lasting;
use crate::rules::records::Statistic;
use crate::system::disk;
use crate::system::process::{self, Ending};
use crate::system::process_identity::ProcessIdentity;
use crate::system::pytest::{
    BENCHMARK_SELECTION, BenchmarkRun, CORRECTNESS_SELECTION, CorrectnessRun, Finished, Pytest,
    RECORD_FORMAT, Recorded,
};

/// How often the tool looks for the worker's answer (a repetition takes seconds).
const POLL: Duration = Duration::from_millis(20);
/// How long a kept worker gets to answer a command that runs nothing, before it is reused.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// One worker's start-up: from its start (or, for one started while an earlier round measured, from
/// when its round let it go on) until it said it was ready: imports, collection, its GPU context and
/// the profiler's first start.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StartUp {
    /// `candidate` or `baseline`.
    pub side: &'static str,
    pub seconds: f64,
    /// Started while an earlier round measured: its imports and collection, before its go, are hidden
    /// behind that round and not counted.
    pub ahead: bool,
    /// A spare became it: the interpreter, its imports outside the tree, its GPU context and the
    /// profiler's first start came before the step, and are not counted.
    pub spare: bool,
    /// Where it went, as the worker timed it (none from a worker that did not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<Phases>,
    /// Each source of its side's tree it compiled, by its path there: the git blob id of the bytes it
    /// compiled (or why there is none), for the step to hold to the side's commit.
    #[serde(skip)]
    pub sources: std::collections::BTreeMap<String, String>,
}

/// Where one worker's start-up went, as the worker timed it (`ready`'s `phases`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
pub struct Phases {
    /// The process's age once pytest was configured: its interpreter, pytest, the first conftests and
    /// what they import (none where the system does not say).
    #[serde(default)]
    pub configured_s: Option<f64>,
    /// The process's age once collected: its interpreter, pytest, the imports and collection (none
    /// where the system does not say), whether or not an earlier round hid them.
    pub collected_s: Option<f64>,
    /// Making its GPU context, once let go.
    pub context_s: f64,
    /// The profiler's first start after the context.
    pub profiler_s: f64,
    /// Why the spare given its command started it afresh in its own process (what it had imported or
    /// read could differ from what a fresh worker loads), its phases then those of a fresh worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub afresh: Option<String>,
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
    /// Waits until the worker has collected and made its GPU context (`ready`), it turned cold or ended,
    /// or `deadline`: what its next command then finds, it says.
    pub(super) fn await_ready(&self, deadline: Instant) -> Result<()> {
        self.wait_for(deadline, "ready").map(drop)
    }

    /// Whether the worker answers a command that selects no case, within [`ANSWER_TIMEOUT`].
    pub(super) fn answers(&mut self) -> Result<bool> {
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
        disk::write_whole(
            &self.channel.join(format!("run-{}", self.commands)),
            command.to_string(),
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
        self.waited = started.elapsed();
        let started = Instant::now();
        let start_up = self.start_up();
        self.start_up = start_up.map(|took| {
            let (phases, sources) = self.ready_says();
            StartUp {
                side: self.side,
                seconds: took.as_secs_f64(),
                ahead: self.ahead,
                spare: self.made_of_spare(),
                phases,
                sources,
            }
        });
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
            "{label}: in the warm {} worker, {}, {} failed, in {:.1}s{}",
            self.side,
            crate::rules::units::counted(done.ran as u64, "case"),
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

    /// Where its start-up went and the sources it compiled, from its `ready`: none where it did not
    /// say, which costs the step nothing but the detail.
    fn ready_says(&self) -> (Option<Phases>, std::collections::BTreeMap<String, String>) {
        #[derive(Deserialize)]
        struct Ready {
            phases: Option<Phases>,
            #[serde(default)]
            sources: std::collections::BTreeMap<String, String>,
        }
        let text = std::fs::read_to_string(self.channel.join("ready")).unwrap_or_default();
        match serde_json::from_str::<Ready>(&text) {
            Ok(ready) => (ready.phases, ready.sources),
            Err(_) => (None, Default::default()),
        }
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

/// The channel file that names the process owning the worker now (the plugin's watch reads it).
pub(super) const OWNER: &str = "owner";
/// The channel file naming the other side's workers' process groups, stopped while this one measures.
pub(super) const HELD: &str = "held";
/// The channel file that keeps a worker started ahead of its round from its GPU context and `ready`.
pub(super) const STANDBY: &str = "standby";
/// The channel file that gives a spare the worker's command it becomes.
pub(super) const GO: &str = "go";
/// The channel file in which a worker names the modules it loaded from outside its tree.
pub(super) const MODULES: &str = "modules";
/// The channel file a spare writes once it is ready to become a worker.
pub(super) const SPARE_READY: &str = "spare";
/// The channel file from which a spare imports ahead (a worker's [`MODULES`]).
pub(super) const PRELOAD: &str = "preload";

/// Makes this process the owner of the worker at `channel`: the worker ends when this process does,
/// unless it is kept first.
pub(super) fn own(channel: &Path) -> Result<()> {
    let me = ProcessIdentity::current().context("cannot read this process's identity in /proc")?;
    disk::write_whole(&channel.join(OWNER), me.to_string())
}

enum Answer {
    Arrived(String),
    Cold(String),
    Ended(Ending),
}
