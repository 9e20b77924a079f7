//! What a campaign gives its agents: `campaign next [--claim]`, a started session each under a lease,
//! and `campaign verify`, the audit of every session.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::summary;
use crate::record::campaign::{self, Campaign, Lease, State};
use crate::rules::units::counted;
use crate::system::git::Repo;
use crate::system::process;
use crate::system::process_identity::ProcessIdentity;
use crate::system::ui::{Render, Ui};

/// `campaign next`: the next started session no agent holds, and whether to claim it.
#[derive(Debug)]
pub struct NextOptions {
    pub name: Option<String>,
    pub claim: bool,
    /// The process that holds the claim; default: the one that ran this command.
    pub holder: Option<u32>,
    pub lease: Duration,
}

/// What `campaign next` hands an agent.
#[derive(Debug, Serialize)]
pub struct NextReport {
    pub name: String,
    /// The session handed over; none when every started one is held or stopped.
    pub kernel: Option<String>,
    pub suite: Option<String>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// The claim, when `--claim` took one.
    pub lease: Option<Lease>,
    /// What to do now, in one sentence.
    pub sentence: String,
}

/// `campaign next [--claim]`: the first started session whose loop goes on and that no live lease
/// holds; a holder asking again gets its own claim back, renewed.
pub fn next(repo: &Repo, options: &NextOptions) -> Result<NextReport> {
    let record = campaign::require(repo, options.name.as_deref())?;
    let holder_pid = options
        .holder
        .unwrap_or_else(std::os::unix::process::parent_id);
    let holder = ProcessIdentity::of(holder_pid)
        .with_context(|| format!("the holding process {holder_pid} does not run"))?;
    let open: Vec<String> = summary::rows(&record)
        .into_iter()
        .filter(|row| row.state == "started")
        .map(|row| format!("{}/{}", row.suite, row.kernel))
        .collect();
    let pick = |c: &mut Campaign| -> Option<usize> {
        let own = c.kernels.iter().position(|e| {
            e.lease.as_ref().is_some_and(|l| l.is(&holder) && l.held()) && e.state == State::Started
        });
        own.or_else(|| {
            c.kernels.iter().position(|e| {
                open.contains(&e.label()) && !e.lease.as_ref().is_some_and(Lease::held)
            })
        })
    };
    let chosen = if options.claim {
        let lease = Lease::new(Some(holder.clone()), options.lease.as_secs())?;
        campaign::update(repo, &record.name, "an agent claims a kernel", |c| {
            let Some(index) = pick(c) else {
                return Ok(None);
            };
            c.kernels[index].lease = Some(lease.clone());
            Ok(Some(c.kernels[index].clone()))
        })?
    } else {
        let mut copy = record.clone();
        pick(&mut copy).map(|index| copy.kernels[index].clone())
    };
    // a look without a claim hands the same session to whoever asks next
    let unclaimed = match options.claim {
        true => "",
        false => {
            " (not claimed: another agent may be handed it too; `campaign next --claim` holds it for you)"
        }
    };
    let sentence = match &chosen {
        Some(entry) => format!(
            "Work in {} (branch {}): run `git cutile-perf status --json` there and follow its next_action; \
             one agent per session{unclaimed}",
            entry.worktree.as_deref().unwrap_or("?"),
            entry.branch.as_deref().unwrap_or("?")
        ),
        None => "Every started session of the campaign is held by an agent or has stopped; \
                 `git cutile-perf campaign status` shows them"
            .to_string(),
    };
    Ok(NextReport {
        name: record.name,
        kernel: chosen.as_ref().map(|e| e.kernel.clone()),
        suite: chosen.as_ref().map(|e| e.suite.clone()),
        worktree: chosen.as_ref().and_then(|e| e.worktree.clone()),
        branch: chosen.as_ref().and_then(|e| e.branch.clone()),
        lease: chosen
            .as_ref()
            .and_then(|e| e.lease.clone())
            .filter(|_| options.claim),
        sentence,
    })
}

/// What `campaign verify` found in each started session.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub name: String,
    pub sessions: Vec<Verified>,
}

#[derive(Debug, Serialize)]
pub struct Verified {
    pub kernel: String,
    pub suite: String,
    pub branch: Option<String>,
    pub iterations: usize,
    /// Each departure from the session's record; empty: it holds.
    pub findings: Vec<String>,
}

/// How long one session's audit may take.
const AUDIT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// `verify --json` run in `worktree`: the session's iterations and each finding in words.
fn audit(worktree: &std::path::Path) -> Result<(usize, Vec<String>)> {
    let program = super::work::tool_binary();
    let command = process::command(&program.to_string_lossy(), &["verify", "--json"]).dir(worktree);
    let ran = process::capture(command, AUDIT_TIMEOUT)?;
    let report: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap_or_default();
    if let Some(error) = report["error"]
        .as_str()
        .filter(|_| report["findings"].is_null())
    {
        return Ok((0, vec![format!("its session cannot be audited: {error}")]));
    }
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    let findings = findings
        .iter()
        .map(|f| {
            format!(
                "{}: {}",
                f["commit"].as_str().unwrap_or("?"),
                f["detail"].as_str().unwrap_or("?")
            )
        })
        .collect();
    Ok((
        report["iterations"].as_u64().unwrap_or(0) as usize,
        findings,
    ))
}

/// `campaign verify`: `verify` in every started session's worktree.
pub fn verify(repo: &Repo, name: Option<&str>) -> Result<VerifyReport> {
    let record = campaign::require(repo, name)?;
    let mut sessions = Vec::new();
    for entry in record.kernels.iter().filter(|e| e.state == State::Started) {
        let dir = entry
            .worktree
            .as_deref()
            .context("a started kernel has a worktree")?;
        let (iterations, findings) = audit(std::path::Path::new(dir))?;
        sessions.push(Verified {
            kernel: entry.kernel.clone(),
            suite: entry.suite.clone(),
            branch: entry.branch.clone(),
            iterations,
            findings,
        });
    }
    Ok(VerifyReport {
        name: record.name,
        sessions,
    })
}

impl VerifyReport {
    /// Fails when a session has a finding.
    pub fn verdict(&self) -> Result<()> {
        let failing: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| !s.findings.is_empty())
            .map(|s| format!("{}/{}", s.suite, s.kernel))
            .collect();
        match failing.is_empty() {
            true => Ok(()),
            false => Err(
                crate::verbs::errors::Reported(crate::rules::hint::Hinted::new(
                    format!(
                        "verify found departures in {}: {}",
                        counted(failing.len() as u64, "session"),
                        failing.join(", ")
                    ),
                    "run `git cutile-perf verify` in each one's worktree for the details",
                ))
                .into(),
            ),
        }
    }
}

impl Render for NextReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        if let (Some(kernel), Some(suite)) = (&self.kernel, &self.suite) {
            let claimed = if self.lease.is_some() {
                "claimed"
            } else {
                "next"
            };
            writeln!(ui.out(), "{claimed}: {suite}/{kernel}")?;
        }
        writeln!(ui.out(), "{}", self.sentence)?;
        Ok(())
    }
}

impl Render for VerifyReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        for session in &self.sessions {
            let verdict = match session.findings.is_empty() {
                true => "holds".to_string(),
                false => counted(session.findings.len() as u64, "finding"),
            };
            writeln!(
                out,
                "{}/{}: {}, {verdict}",
                session.suite,
                session.kernel,
                counted(session.iterations as u64, "iteration")
            )?;
            for finding in &session.findings {
                writeln!(out, "  {finding}")?;
            }
        }
        writeln!(
            out,
            "campaign {}: {} verified",
            self.name,
            counted(self.sessions.len() as u64, "session")
        )?;
        Ok(())
    }
}
