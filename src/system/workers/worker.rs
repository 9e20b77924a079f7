//! One warm worker's life: its start (at once, or standing by until its round lets it go), its adoption
//! from an earlier command and its keeping for a later one, and its end with its owner.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::channel::{GO, OWNER, STANDBY, StartUp, own};
use super::lasting::{self, Code, Lasting, WorkerEnv};
use super::spare::Spare;
use super::{CHANNEL_OPTION, WORKER_PLUGIN};
use crate::system::disk::write_whole;
use crate::system::process::Background;
use crate::system::pytest::{
    self, BENCHMARK_RECORD, BENCHMARK_SELECTION, CASES_PLUGIN, CENSUS_PLUGIN,
    CORRECTNESS_SELECTION, Prepared, Pytest, SEEDS_PLUGIN,
};
use crate::system::runner::{PytestRun, Workers};

/// One warm pytest process holding one side's code.
pub struct Worker {
    /// `candidate` or `baseline`.
    pub side: &'static str,
    pub(super) channel: PathBuf,
    pub(super) process: Background,
    pub(super) log: PathBuf,
    /// Seconds since the epoch at its start, and at its last command.
    started: u64,
    pub(super) last_command: u64,
    /// Commands given so far.
    pub(super) commands: u32,
    /// Whether a repetition has been measured: a crash after one is the worker's, not the code's.
    pub(super) measured: bool,
    /// Left running for a later command: dropping it ends nothing.
    kept: bool,
    /// Which of its home's channels is its own ([`lasting::channel_in`]).
    pub(super) slot: u8,
    /// Set while it stands by: it has imported and collected, and makes its GPU context when let go.
    standing_by: Option<StandBy>,
    /// When this process started it (none for one adopted from an earlier command): its first command
    /// says how long its start-up took, the cost a warm worker saves the next time.
    pub(super) spawned: Option<std::time::SystemTime>,
    /// Whether it was started while an earlier round measured (its start-up counted from its go).
    pub(super) ahead: bool,
    /// The home the spare it was made of started in (none for a worker started as itself): removed with
    /// the worker, or when it is kept. Its start-up is counted from when the spare was given it.
    spare_home: Option<PathBuf>,
    /// Its start-up, once its first command has read it, until its side takes it.
    pub(super) start_up: Option<StartUp>,
    /// How long its last command waited for it to be ready (its start-up not yet over).
    pub(super) waited: std::time::Duration,
}

/// Why a worker starts before its round lets it measure, which says whether it stands by (waits,
/// collected, for its go before it makes its GPU context) and where its start-up is counted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StandBy {
    /// Started while an earlier round measured: what it took then was hidden, counted from its go.
    Ahead,
    /// Started while an earlier round measured, and never told to wait: it makes its GPU context and
    /// warms up as soon as it has collected (held while the other side measures, as its side's worker
    /// is), counted from its start.
    AheadGoing,
    /// Started for the round about to measure: nothing hid it, counted from its start.
    ForThisRound,
}

impl StandBy {
    /// Whether the worker waits for its go once collected.
    fn waits(self) -> bool {
        self != StandBy::AheadGoing
    }
}

impl Worker {
    /// Starts `runner`'s side as a worker with its channel in `home` (made of `spare` where there is
    /// one), owned by this process; it collects while the caller goes on.
    pub fn start(
        runner: &Pytest,
        side: &'static str,
        home: &Path,
        spare: Option<Spare>,
    ) -> Result<Worker> {
        Worker::spawn(runner, side, home, 0, None, spare)
    }

    /// Starts a worker in channel `slot` of `home` (beside those in the others), standing by when
    /// `standby` says why: it imports and collects, then (unless it goes at once) waits for [`Worker::go`]
    /// before it makes its GPU context and says `ready`, so that it can start while another worker measures, and so that a
    /// round's new workers make their contexts one after the other, in the round's order. Made of
    /// `spare` where there is one: the spare is given the worker's command (`go`), its interpreter,
    /// imports, GPU context and profiler ready, and its start-up is counted from now.
    pub(super) fn spawn(
        runner: &Pytest,
        side: &'static str,
        home: &Path,
        slot: u8,
        standby: Option<StandBy>,
        spare: Option<Spare>,
    ) -> Result<Worker> {
        let channel = lasting::channel_in(home, slot);
        if channel.exists() {
            std::fs::remove_dir_all(&channel)
                .with_context(|| format!("cannot empty {}", channel.display()))?;
        }
        std::fs::create_dir_all(&channel)
            .with_context(|| format!("cannot create {}", channel.display()))?;
        if standby.is_some_and(StandBy::waits) {
            write_whole(&channel.join(STANDBY), "")?;
        }
        // a worker on another machine (a Slurm job's node) cannot see this process: the job's end ends it
        if runner.place.workers() == Workers::Lasting {
            own(&channel)?;
        }
        // its log outlives its home: a crash's reason names it
        let name = format!(
            "worker-{}{}",
            home.file_name().unwrap_or_default().to_string_lossy(),
            match slot {
                0 => String::new(),
                slot => format!(".{slot}"),
            }
        );
        let prepared = command(runner, home, &channel, &name)?;
        let (process, log, spare_home) = match spare {
            None => {
                let expression = prepared.with_call(|call| runner.place.pytest_command(call));
                let process = Background::start(expression, &prepared.log)?;
                (process, prepared.log.clone(), None)
            }
            Some(spare) => {
                let spare = spare.into_record();
                // owned from here: an error below ends it
                let process = Background::adopt(spare.process.clone());
                give_command(&spare.channel(), &prepared)?;
                // its output goes on where this step's workers' goes (it writes to the file, renamed)
                let log = match std::fs::rename(&spare.log, &prepared.log) {
                    Ok(()) => prepared.log.clone(),
                    Err(_) => spare.log.clone(),
                };
                (process, log, Some(spare.home.clone()))
            }
        };
        Ok(Worker {
            side,
            channel,
            process,
            log,
            started: lasting::now_s(),
            last_command: lasting::now_s(),
            commands: 0,
            measured: false,
            kept: false,
            slot,
            standing_by: standby.filter(|why| why.waits()),
            spawned: Some(std::time::SystemTime::now()),
            ahead: matches!(standby, Some(StandBy::Ahead | StandBy::AheadGoing)),
            spare_home,
            start_up: None,
            waited: std::time::Duration::ZERO,
        })
    }

    /// Lets a worker standing by go on: it makes its GPU context and says `ready`. Its start-up is
    /// counted from now when an earlier round hid the rest of it. Nothing for a worker not standing by.
    pub(super) fn go(&mut self) -> Result<()> {
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
            slot: kept.slot,
            standing_by: None,
            spawned: None,
            ahead: false,
            spare_home: None,
            start_up: None,
            waited: std::time::Duration::ZERO,
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
            slot: self.slot,
        })
    }

    /// Whether a spare the last step started became it.
    pub fn made_of_spare(&self) -> bool {
        self.spare_home.is_some()
    }

    /// Whether it has said it is ready: collected, its GPU context made and its profiler started.
    pub(super) fn is_ready(&self) -> bool {
        self.channel.join("ready").exists()
    }

    /// Its channel: what it says of itself (the modules it loaded among it).
    pub fn channel(&self) -> &Path {
        &self.channel
    }

    /// The worker's pid, also its process group's number.
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Its pid, and the pid its pytest wrote as it started where that differs (a Slurm job step: the pid
    /// on the node, which that node's nvidia-smi lists).
    pub(super) fn pids(&self) -> Vec<u32> {
        let written = std::fs::read_to_string(self.channel.join("pid")).ok();
        let on_its_machine = written
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|ready| ready["pid"].as_u64())
            .and_then(|pid| u32::try_from(pid).ok());
        let mut pids = vec![self.pid()];
        pids.extend(on_its_machine.filter(|&pid| pid != self.pid()));
        pids
    }
}

/// Gives the spare whose channel is `spare_channel` the worker's command `prepared`, owned by this
/// process until it watches the worker's own channel (the spare ends should this process be killed
/// before).
fn give_command(spare_channel: &Path, prepared: &Prepared) -> Result<()> {
    own(spare_channel)?;
    let go = prepared.with_call(|call| {
        serde_json::json!({
            "argv": std::iter::once(call.program).chain(call.args.iter().copied()).collect::<Vec<_>>(),
            "dir": call.dir,
            "env": (call.env.iter())
                .map(|(name, value)| (name.to_string(), value.to_string_lossy().into_owned()))
                .collect::<std::collections::BTreeMap<_, _>>(),
        })
    });
    write_whole(&spare_channel.join(GO), go.to_string())
}

/// The worker command of `runner`'s side with its channel at `channel`, its plugins in `home`; `name`
/// names its log.
fn command(runner: &Pytest, home: &Path, channel: &Path, name: &str) -> Result<Prepared> {
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
    runner.prepare(
        PytestRun::Worker,
        name,
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
    )
}

impl Drop for Worker {
    fn drop(&mut self) {
        // the process group goes with `process`; the channel is ours alone
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.channel);
        }
        // kept or not, it watches its own channel by now
        if let Some(home) = &self.spare_home {
            let _ = std::fs::remove_dir_all(home);
        }
    }
}
