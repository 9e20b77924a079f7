//! A campaign: many kernels' sessions started together, each in a git worktree of its own, spread over
//! a machine's GPUs or a Slurm array job. Its record is one JSON file in a commit chain of its own,
//! `refs/cutile-perf/campaigns/<name>`, which `push` and `fetch` carry with the session refs. Every change
//! is a new commit moved onto the ref by a compare-and-swap (`git update-ref <ref> <new> <old>`), so that
//! workers, array tasks and agents that claim kernels at once never take the same one: a claim that lost
//! the race reads the record again and takes the next.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::rules::hint::hinted;
use crate::system::git::Repo;
use crate::system::process_identity::ProcessIdentity;

/// Where the campaigns' refs live, under the session refs that `push` and `fetch` carry.
pub const REF_PREFIX: &str = "refs/cutile-perf/campaigns/";
/// The file of the record in each commit of a campaign's ref.
const FILE: &str = "campaign.json";
/// How many times an update reads the record again after another writer moved the ref first.
const RACES: usize = 200;

/// A campaign as its ref holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    pub name: String,
    /// The branch (or commit) every kernel's worktree starts from.
    pub base: String,
    /// `start`'s own flags, given to every session.
    pub start_args: Vec<String>,
    /// Where the kernels run: `local` (one worker per GPU) or `slurm` (one array job).
    pub runner: String,
    /// The array job's sbatch options and how long it may wait in the queue, for the Slurm runner.
    #[serde(default)]
    pub slurm_args: String,
    #[serde(default)]
    pub queue_timeout_s: Option<u64>,
    /// The GPUs of the local workers, by nvidia-smi's index; empty: one worker on the environment's GPU.
    pub gpus: Vec<String>,
    /// Seconds since the epoch at which the campaign was made.
    pub created: u64,
    pub kernels: Vec<Entry>,
}

/// One kernel of a campaign: where its session is and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub kernel: String,
    pub suite: String,
    /// How the kernel is measured, as `inspect --all` names it (`test_perf`, `benchmark`, ...).
    pub source: String,
    pub state: State,
    /// Why it failed, or why it went back to the queue.
    pub reason: Option<String>,
    /// The session's worktree, once it has one.
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The GPU its baseline ran on (`CUDA_VISIBLE_DEVICES`), or the Slurm job that ran it.
    pub gpu: Option<String>,
    pub job: Option<String>,
    /// Who runs or drives it now: a worker while its baseline runs, an agent after `campaign next --claim`.
    pub lease: Option<Lease>,
    /// How many times its baseline was tried.
    pub attempts: u32,
    /// Seconds from getting its GPU to its end, for the last attempt.
    pub seconds: Option<f64>,
}

/// Where a kernel stands in the campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Waiting for a worker.
    Queued,
    /// A worker measures its baseline now.
    Running,
    /// Its session has a baseline.
    Started,
    /// It could not be started; `reason` says why.
    Failed,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Running => "running",
            State::Started => "started",
            State::Failed => "failed",
        }
    }
}

/// A claim on a kernel: the holding process, its host and until when it holds. It ends when the holder
/// stops (seen on its own machine) or when its time is up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    pub holder: ProcessIdentity,
    pub host: String,
    /// Seconds since the epoch: when it was taken and when it ends.
    pub since: u64,
    pub until: u64,
}

impl Lease {
    /// A lease for `holder` (this process when none) for `seconds`.
    pub fn new(holder: Option<ProcessIdentity>, seconds: u64) -> Result<Lease> {
        let holder = holder
            .or_else(ProcessIdentity::current)
            .context("cannot read the holding process in /proc")?;
        let since = now();
        Ok(Lease {
            holder,
            host: host(),
            since,
            until: since + seconds,
        })
    }

    /// Whether the claim still holds: its time is not up, and its holder runs (a holder on another
    /// machine, whose processes cannot be seen from here, holds until its time is up).
    pub fn held(&self) -> bool {
        now() < self.until && (!self.holder.this_boot() || self.holder.alive())
    }

    /// Whether `identity` holds it.
    pub fn is(&self, identity: &ProcessIdentity) -> bool {
        self.holder == *identity
    }
}

impl Campaign {
    /// The value of `flag` in the flags every session is started with, if it is one of them.
    pub fn start_flag(&self, flag: &str) -> Option<&str> {
        let at = self.start_args.iter().position(|a| a == flag)?;
        self.start_args.get(at + 1).map(String::as_str)
    }

    /// Gives `flag` this `value` in the flags every session is started with, in place of one it had.
    pub fn set_start_flag(&mut self, flag: &str, value: String) {
        match self.start_args.iter().position(|a| a == flag) {
            Some(at) if at + 1 < self.start_args.len() => self.start_args[at + 1] = value,
            _ => self.start_args.extend([flag.to_string(), value]),
        }
    }
}

impl Entry {
    pub fn queued(kernel: &str, suite: &str, source: &str) -> Entry {
        Entry {
            kernel: kernel.to_string(),
            suite: suite.to_string(),
            source: source.to_string(),
            state: State::Queued,
            reason: None,
            worktree: None,
            branch: None,
            gpu: None,
            job: None,
            lease: None,
            attempts: 0,
            seconds: None,
        }
    }

    /// `suite/kernel`, as the campaign names it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.suite, self.kernel)
    }

    /// Whether a worker may take it: queued, or left running by a worker that stopped.
    pub fn waiting(&self) -> bool {
        match self.state {
            State::Queued => true,
            State::Running => !self.lease.as_ref().is_some_and(Lease::held),
            State::Started | State::Failed => false,
        }
    }

    /// Back in the queue, without what the last attempt set.
    pub fn requeue(&mut self, reason: Option<String>) {
        self.state = State::Queued;
        self.reason = reason;
        self.worktree = None;
        self.branch = None;
        self.lease = None;
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// This machine's name, as the kernel reports it.
pub fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The ref of campaign `name`.
pub fn ref_name(name: &str) -> String {
    format!("{REF_PREFIX}{name}")
}

/// The campaigns of the repository, newest first.
pub fn names(repo: &Repo) -> Result<Vec<String>> {
    let listed = repo.git(&[
        "for-each-ref",
        "--sort=-committerdate",
        "--format=%(refname)",
        REF_PREFIX,
    ])?;
    Ok(listed
        .lines()
        .filter_map(|line| line.strip_prefix(REF_PREFIX))
        .map(str::to_string)
        .collect())
}

/// The campaign `name` (the newest when none), or an error saying how to make one.
pub fn require(repo: &Repo, name: Option<&str>) -> Result<Campaign> {
    let name = match name {
        Some(name) => name.to_string(),
        None => names(repo)?.into_iter().next().ok_or_else(|| {
            hinted(
                "this repository has no campaign",
                "start one with `git cutile-perf campaign start --all` (or name kernels, or --suite S)",
            )
        })?,
    };
    match load(repo, &name)? {
        Some((_, campaign)) => Ok(campaign),
        None => Err(hinted(
            format!("there is no campaign {name:?}"),
            "`git cutile-perf campaign status` without --name shows the newest; `git for-each-ref \
             refs/cutile-perf/campaigns/` lists them all",
        )),
    }
}

/// The campaign `name` with the commit that holds it, if its ref exists.
pub fn load(repo: &Repo, name: &str) -> Result<Option<(String, Campaign)>> {
    let reference = ref_name(name);
    let commit = repo.git(&[
        "rev-parse",
        "-q",
        "--verify",
        &format!("{reference}^{{commit}}"),
    ]);
    let Ok(commit) = commit.map(|c| c.trim().to_string()) else {
        return Ok(None);
    };
    let text = repo.git(&["cat-file", "blob", &format!("{commit}:{FILE}")])?;
    let campaign = serde_json::from_str(&text)
        .with_context(|| format!("the record of campaign {name} ({reference}) cannot be read"))?;
    Ok(Some((commit, campaign)))
}

/// Writes `campaign` as a new commit on its ref, if the ref still names `parent` (none: no ref yet);
/// `false` when another writer moved it first.
fn save(repo: &Repo, campaign: &Campaign, parent: Option<&str>, what: &str) -> Result<bool> {
    let json = serde_json::to_string_pretty(campaign)? + "\n";
    let blob = repo.git_input(&["hash-object", "-w", "--stdin"], &json)?;
    let tree = repo.git_input(
        &["mktree"],
        &format!("100644 blob {}\t{FILE}\n", blob.trim()),
    )?;
    let message = format!("campaign {}: {what}\n", campaign.name);
    let mut args = vec!["commit-tree", tree.trim()];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let commit = repo.git_input(&args, &message)?;
    // the all-zero id makes update-ref refuse when the ref already exists
    let old = parent.unwrap_or("0000000000000000000000000000000000000000");
    let reference = ref_name(&campaign.name);
    Ok(repo
        .git(&["update-ref", "-m", &message, &reference, commit.trim(), old])
        .is_ok())
}

/// Makes campaign `campaign.name`; fails if one of that name exists.
pub fn create(repo: &Repo, campaign: &Campaign) -> Result<()> {
    if !save(repo, campaign, None, "made")? {
        return Err(hinted(
            format!("a campaign named {} exists already", campaign.name),
            "give another --name, or continue that one with `git cutile-perf campaign resume`",
        ));
    }
    Ok(())
}

/// Changes campaign `name` by `change` and records it as `what`, atomically: when another writer moved
/// the ref meanwhile, the change is made again on what it wrote. `change` returns what the caller
/// wants back, and `None` to leave the record as it is.
pub fn update<T>(
    repo: &Repo,
    name: &str,
    what: &str,
    mut change: impl FnMut(&mut Campaign) -> Result<Option<T>>,
) -> Result<Option<T>> {
    for _ in 0..RACES {
        let (commit, mut campaign) =
            load(repo, name)?.with_context(|| format!("campaign {name} has no record"))?;
        let Some(value) = change(&mut campaign)? else {
            return Ok(None);
        };
        if save(repo, &campaign, Some(&commit), what)? {
            return Ok(Some(value));
        }
    }
    anyhow::bail!("campaign {name}: the record kept changing under {RACES} attempts to write it")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(holder: ProcessIdentity, until: u64) -> Lease {
        Lease {
            holder,
            host: host(),
            since: 0,
            until,
        }
    }

    #[test]
    fn a_lease_holds_while_its_holder_runs_and_its_time_is_not_up() {
        let me = ProcessIdentity::current().unwrap();
        assert!(lease(me.clone(), now() + 60).held());
        assert!(!lease(me.clone(), now() - 1).held());
        let gone = ProcessIdentity {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(!lease(gone, now() + 60).held());
        // a holder of another boot (another machine) cannot be seen: it holds until its time is up
        let elsewhere = ProcessIdentity {
            boot_id: "another-machine".into(),
            ..me
        };
        assert!(lease(elsewhere, now() + 60).held());
    }

    #[test]
    fn a_start_flag_is_replaced_or_added() {
        let mut campaign = Campaign {
            name: "c".into(),
            base: "main".into(),
            start_args: vec!["--budget".into(), "2s".into(), "--no-gpu".into()],
            runner: "local".into(),
            slurm_args: String::new(),
            queue_timeout_s: None,
            gpus: Vec::new(),
            created: 0,
            kernels: Vec::new(),
        };
        campaign.set_start_flag("--budget", "10m0s".into());
        campaign.set_start_flag("--filter", "small".into());
        assert_eq!(
            campaign.start_args,
            ["--budget", "10m0s", "--no-gpu", "--filter", "small"]
        );
    }

    #[test]
    fn a_running_kernel_whose_worker_stopped_waits_again() {
        let mut entry = Entry::queued("k", "ops", "test_perf");
        assert!(entry.waiting());
        entry.state = State::Running;
        entry.lease = Some(lease(ProcessIdentity::current().unwrap(), now() + 60));
        assert!(!entry.waiting());
        entry.lease.as_mut().unwrap().until = 0;
        assert!(entry.waiting());
        entry.state = State::Failed;
        assert!(!entry.waiting());
    }
}
