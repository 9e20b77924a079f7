//! `verify`: audits the session branch's record and fails on any finding. It gathers what git holds
//! (commits, trees, evidence notes); the checks on those values are `src/record/audit.rs`.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::record::audit::{self, Finding, Kind};
use crate::record::census;
use crate::record::evidence::Evidence;
use crate::record::history::{Configs, History, require_history};
use crate::record::session::Iteration;
use crate::rules::guard;
use crate::rules::hint::Hinted;
use crate::rules::trailers::Block;
use crate::rules::units::counted;
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};
use crate::verbs::errors::Reported;

/// What `verify --json` prints.
#[derive(Debug, Serialize)]
pub struct VerifyReport {
    pub baseline: String,
    pub iterations: usize,
    /// Iterations whose evidence note was found and checked.
    pub with_evidence: usize,
    /// Iterations whose commit carries a good signature (the tool signs with the user's key).
    pub signed: Vec<u32>,
    /// The session perf file the baseline recorded, as `path@hash`, when the session's test is one.
    pub perf_file: Option<String>,
    /// The standalone benchmark script that perf file runs, when it runs one: the checks reach it less
    /// far than a `test_perf`, as `benchmark_reach` says.
    pub benchmark: Option<String>,
    pub benchmark_reach: Option<&'static str>,
    pub findings: Vec<Finding>,
}

/// The session's record audited; a finding is in the report, and [`VerifyReport::verdict`] fails on it.
pub fn run(repo: &Repo) -> Result<VerifyReport> {
    // each iteration's configs are read again as its evidence is checked, one at a time: the audit's
    // memory does not grow with the session's configs
    let report = match require_history(repo, Configs::CurrentBaseline) {
        Ok(history) => audit_history(repo, &history)?,
        // a history that cannot be read at all is itself the finding
        Err(e)
            if e.to_string().contains("history is broken")
                || e.to_string().contains("unreadable") =>
        {
            VerifyReport {
                baseline: String::new(),
                iterations: 0,
                with_evidence: 0,
                signed: Vec::new(),
                perf_file: None,
                benchmark: None,
                benchmark_reach: None,
                findings: vec![Finding {
                    kind: Kind::BrokenHistory,
                    commit: repo.head()?,
                    detail: format!("{e:#}").replace('\n', " "),
                }],
            }
        }
        Err(e) => return Err(e),
    };
    Ok(report)
}

impl Render for VerifyReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        for finding in &self.findings {
            writeln!(out, "{finding}")?;
        }
        if let Some(file) = &self.perf_file {
            writeln!(out, "the session perf file the baseline measured: {file}")?;
        }
        if let (Some(script), Some(reach)) = (&self.benchmark, self.benchmark_reach) {
            writeln!(out, "it runs the standalone benchmark {script}: {reach}")?;
        }
        writeln!(
            out,
            "{} iterations since {}, {} with an evidence note, {} signed: {}",
            self.iterations,
            crate::record::session::short(&self.baseline),
            self.with_evidence,
            self.signed.len(),
            match self.findings.len() {
                0 => "the record holds".to_string(),
                n => counted(n as u64, "finding"),
            }
        )?;
        Ok(())
    }
}

impl VerifyReport {
    /// Fails when the audit found anything (after the report is shown: the failure says only how many).
    pub fn verdict(&self) -> Result<()> {
        if self.findings.is_empty() {
            return Ok(());
        }
        Err(Reported(Hinted::new(
            format!(
                "verify found {} from the session's record",
                counted(self.findings.len() as u64, "departure")
            ),
            self.hint(),
        ))
        .into())
    }

    /// What to do about the findings: `repair` only where it has something to take back.
    fn hint(&self) -> String {
        let has = |kinds: &[Kind]| self.findings.iter().any(|f| kinds.contains(&f.kind));
        let mut hints = vec!["each line names the commit and what differs".to_string()];
        if has(&[Kind::UnrecordedChange]) {
            hints.push(
                "`git cutile-perf repair --json` takes back the change of commits the tool did not make"
                    .into(),
            );
        }
        if has(&[Kind::PerfFileChanged]) {
            hints.push(
                "restore the session perf file as the baseline measured it, or start a new session on \
                 the changed one"
                    .into(),
            );
        }
        if has(&[Kind::MissingEvidence]) {
            hints.push(format!(
                "fetch the evidence notes (`git fetch origin {ref_}:{ref_}`)",
                ref_ = crate::record::evidence::NOTES_REF
            ));
        }
        if hints.len() == 1 {
            hints.push(
                "the record cannot be repaired in place: start a new session from the last commit \
                 whose record holds"
                    .into(),
            );
        }
        hints.join("; ")
    }
}

/// Every finding on the session's record.
pub fn audit_history(repo: &Repo, history: &History) -> Result<VerifyReport> {
    let mut findings = audit::foreign_findings(repo, history)?;
    findings.extend(audit::identity_findings(repo, history)?);
    findings.extend(outside_allowed(repo, history)?);
    findings.extend(undone_attempts(repo, history)?);
    let (with_evidence, evidence_findings) = evidence_findings(repo, history)?;
    findings.extend(evidence_findings);
    let (signed, signature_findings) = signatures(repo, history)?;
    findings.extend(signature_findings);
    if let Some(detail) = crate::features::refusals::perf_file_change(repo, &history.session)? {
        findings.push(Finding {
            kind: Kind::PerfFileChanged,
            commit: history.baseline_commit.clone(),
            detail,
        });
    }
    Ok(VerifyReport {
        baseline: history.baseline_commit.clone(),
        iterations: history.steps(),
        with_evidence,
        signed,
        perf_file: history
            .session
            .perf_file
            .as_ref()
            .map(|hash| format!("{}@{hash}", history.session.test)),
        benchmark: history.session.benchmark.clone(),
        benchmark_reach: history
            .session
            .benchmark
            .as_ref()
            .map(|_| crate::record::session::BENCHMARK_REACH),
        findings,
    })
}

/// The iterations whose commit is signed well, and the findings: in a session whose baseline is signed,
/// each iteration commit and attempt without a good signature; in any session, a bad one. What a
/// signature is worth is git's judgement (`%G?`, with the user's keyring or `gpg.ssh.allowedSignersFile`).
fn signatures(repo: &Repo, history: &History) -> Result<(Vec<u32>, Vec<Finding>)> {
    let range = format!("{}..HEAD", history.baseline_commit);
    let mut listed = repo.git(&["log", "--first-parent", "--format=%H %G?", &range])?;
    listed += &repo.git(&["log", "-1", "--format=%H %G?", &history.baseline_commit])?;
    let state: std::collections::HashMap<&str, &str> =
        listed.lines().filter_map(|l| l.split_once(' ')).collect();
    let good = |commit: &str| matches!(state.get(commit), Some(&"G") | Some(&"U"));
    let signed_session = good(&history.baseline_commit);
    let mut signed = Vec::new();
    let mut findings = Vec::new();
    for (commit, it) in &history.iterations {
        if good(commit) {
            signed.push(it.number);
        }
        for made in std::iter::once(commit).chain(&it.attempt) {
            let code = state.get(made.as_str()).copied().unwrap_or("N");
            let problem = match code {
                "G" | "U" => None,
                "N" if !signed_session => None,
                "N" => Some("is not signed, though the session's baseline is"),
                "B" => Some("carries a bad signature"),
                "R" => Some("is signed by a revoked key"),
                "X" | "Y" => Some("carries an expired signature or one by an expired key"),
                _ if !signed_session => None,
                _ => Some(
                    "carries a signature that cannot be checked here (its key is not in the keyring or gpg.ssh.allowedSignersFile)",
                ),
            };
            let what = if made == commit { "commit" } else { "attempt" };
            findings.extend(problem.map(|problem| Finding {
                kind: Kind::Signature,
                commit: made.clone(),
                detail: format!("iteration {}'s {what} {problem}", it.number),
            }));
        }
    }
    Ok((signed, findings))
}

/// Commit by commit since the baseline, the paths outside the allowed set.
fn outside_allowed(repo: &Repo, history: &History) -> Result<Vec<Finding>> {
    let range = format!("{}..HEAD", history.baseline_commit);
    let commits: Vec<String> = repo
        .git(&["rev-list", "--first-parent", &range])?
        .lines()
        .map(str::to_string)
        .collect();
    let changed = repo.changed_by_commits(&commits)?;
    let cancelled = cancelled_commits(repo, history)?;
    Ok(commits
        .into_iter()
        .zip(changed)
        .filter(|(commit, _)| !cancelled.contains(commit))
        .filter_map(|(commit, changed)| {
            let outside = guard::disallowed(&changed, &history.session.allowed);
            (!outside.is_empty()).then(|| Finding {
                kind: Kind::OutsideAllowed,
                commit,
                detail: format!("changes {}", outside.join(", ")),
            })
        })
        .collect())
}

/// The commits of the runs that record nothing and, taken together, change nothing (a commit made past
/// the hook and `repair`'s take-back of it, a merge and its take-back): one cancelled pair, whatever
/// each of them touched on the way.
fn cancelled_commits(repo: &Repo, history: &History) -> Result<std::collections::HashSet<String>> {
    let mut cancelled = std::collections::HashSet::new();
    for run in &history.foreign.unrecorded {
        let before = format!("{}^", run.oldest);
        if repo.changed_between(&before, &run.newest)?.is_empty() {
            let range = format!("{before}..{}", run.newest);
            let listed = repo.git(&["rev-list", "--first-parent", &range])?;
            cancelled.extend(listed.lines().map(str::to_string));
        }
    }
    Ok(cancelled)
}

/// A reverted or crashed iteration sits on its attempt and returns the tree to the attempt's parent.
fn undone_attempts(repo: &Repo, history: &History) -> Result<Vec<Finding>> {
    // the tree before a commit: its first parent's (none for a root commit)
    let tree_before = |commit: &str| -> Result<Option<String>> {
        match repo.commit_parts(commit)?.1.first() {
            Some(parent) => Ok(Some(repo.commit_parts(parent)?.0)),
            None => Ok(None),
        }
    };
    let mut findings = Vec::new();
    for (commit, it) in history.iterations.iter().skip(1) {
        let problem = match (&it.attempt, it.status) {
            (None, crate::rules::decision::Status::Keep) => continue,
            (None, status) => Some(format!("a {status} iteration names no attempt")),
            (Some(attempt), _) => {
                let (tree, parents) = repo.commit_parts(commit)?;
                if parents.first() != Some(attempt) {
                    Some(format!("its attempt {attempt} is not its parent"))
                } else if tree_before(attempt)? != Some(tree) {
                    Some(format!(
                        "its tree is not the tree before its attempt {}",
                        crate::record::session::short(attempt)
                    ))
                } else {
                    None
                }
            }
        };
        findings.extend(problem.map(|detail| Finding {
            kind: Kind::AttemptNotUndone,
            commit: commit.clone(),
            detail,
        }));
    }
    Ok(findings)
}

/// Each iteration against its evidence note; how many had one, and the findings.
fn evidence_findings(repo: &Repo, history: &History) -> Result<(usize, Vec<Finding>)> {
    let mut findings = Vec::new();
    let mut with_evidence = 0;
    let mut baseline_passed = Vec::new();
    let mut start_settings = Default::default();
    let mut prior: Vec<Iteration> = Vec::new();
    for (commit, lean) in &history.iterations {
        let finding = |kind, detail: String| Finding {
            kind,
            commit: commit.clone(),
            detail,
        };
        match Evidence::of(repo, commit) {
            Ok(None) => findings.push(finding(
                Kind::MissingEvidence,
                format!(
                    "iteration {} has no evidence note in {ref_}: recorded before the tool wrote notes, \
                     its notes not fetched (`git fetch origin {ref_}:{ref_}`), or not made by the tool",
                    lean.number,
                    ref_ = crate::record::evidence::NOTES_REF
                ),
            )),
            Err(e) => findings.push(finding(Kind::UnreadableEvidence, format!("{e:#}"))),
            Ok(Some(evidence)) => {
                with_evidence += 1;
                // the iteration with its configs, as the history read it before dropping them
                let it = &Iteration::read(&Block::from_message(&repo.message(commit)?))?
                    .context("an iteration's trailers are gone from its commit")?;
                if it.number == 0 {
                    baseline_passed = evidence.passed_cases().unwrap_or_default();
                    start_settings = census::harness_settings(&evidence.runs);
                } else if let Some(why) = census::settings_departure(&start_settings, &evidence.runs) {
                    findings.push(finding(
                        Kind::EvidenceMismatch,
                        format!("iteration {}: {why}", it.number),
                    ));
                }
                for (what, recorded, found) in
                    audit::check_iteration(&history.session, &prior, it, &evidence, &baseline_passed)
                {
                    findings.push(finding(
                        Kind::EvidenceMismatch,
                        format!(
                            "iteration {}: {what} is {recorded} in the trailers but {found} from the evidence",
                            it.number
                        ),
                    ));
                }
                findings.extend(rewritten_summary(repo, commit, &evidence)?);
                // the baseline's binding is part of `identity_findings`
                if it.number > 0 {
                    findings.extend(audit::binding_finding(repo, commit, &evidence)?);
                }
            }
        }
        // the rules read the earlier iterations' statuses and changes only
        prior.push(lean.clone());
    }
    Ok((with_evidence, findings))
}

/// A note whose readable summary (what `git log --notes` shows) says what its payload does not.
fn rewritten_summary(repo: &Repo, commit: &str, evidence: &Evidence) -> Result<Option<Finding>> {
    let note = crate::record::evidence::note(repo, commit)?.unwrap_or_default();
    let rewritten = evidence.rewritten_summary(&note);
    Ok((!rewritten.is_empty()).then(|| Finding {
        kind: Kind::SummaryMismatch,
        commit: commit.to_string(),
        detail: format!(
            "iteration {}'s note says {} where its payload gives otherwise (the summary was edited)",
            evidence.iteration,
            rewritten
                .iter()
                .map(|line| format!("{line:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }))
}
