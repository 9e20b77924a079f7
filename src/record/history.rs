//! The session's history: the iterations read back from the branch's commits, and the loop state
//! derived from them (current baseline, best, consecutive iterations without a gain).
//!
//! Git yields the commits (first parents, newest first); [`History::from_commits`] is the one place that
//! turns them into a history, for the verbs and for the tests alike.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use crate::record::session::{BRANCH_PREFIX, Iteration, Session, Skip, short};
use crate::rules::decision::{Decision, Estimate, LoopState, Status};
use crate::rules::hint::{Hinted, hinted};
use crate::rules::trailers::Block;
use crate::system::git::Repo;

mod variants;
pub use variants::{VARIANT_FLOOR_PCT, Variant, variant};

/// Which iterations keep their per-config values when a history is read. Only the current baseline's
/// are needed to decide the next step; keeping every iteration's would grow with the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Configs {
    CurrentBaseline,
    All,
}

/// A session with its iterations, oldest first (iteration 0 is the baseline).
#[derive(Debug, Clone)]
pub struct History {
    pub session: Session,
    pub baseline_commit: String,
    pub iterations: Vec<(String, Iteration)>,
    /// The letters `next --skip` recorded as not applying, oldest first.
    pub skipped: Vec<Skip>,
    /// Commits since the baseline that the tool did not make.
    pub foreign: Foreign,
    /// The paired estimates of the iterations, by number, as their evidence notes give them: what each
    /// step measured config by config, and what its verdict read. Empty until a verb that lists
    /// variants reads them (`features::report::estimates`); without them the variants compare the
    /// trailers' configs.
    pub estimates: BTreeMap<u32, Estimate>,
    /// The allowed paths the work tree changes, not yet stepped (an edit in progress, or one an
    /// interrupted step left). Empty until a verb that says what comes next reads the work tree.
    pub edited: Vec<String>,
}

/// What a history holds that is not the tool's: the reader passes over these, and `step` and `verify`
/// judge them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Foreign {
    /// Commits after the baseline that declare a session again (a forged `Cutile-Perf-Allow` would widen
    /// the allowed paths): the session is read from the baseline commit only.
    pub sessions: Vec<String>,
    /// Runs of consecutive commits that record no iteration (no trailers, or a skip's) and that no
    /// iteration names as its attempt, newest first: none of them may change the tree.
    pub unrecorded: Vec<Unrecorded>,
}

/// Consecutive commits that record no iteration, between iterations: `oldest` to `newest` along first parents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrecorded {
    pub newest: String,
    pub oldest: String,
}

impl History {
    /// The session whose branch yielded `commits` (id and message, newest first, following first
    /// parents), read back to its baseline commit and validated. `None` when no commit carries a
    /// session. Commits without cutile-perf trailers are passed over.
    pub fn from_commits(
        commits: impl IntoIterator<Item = Result<(String, String)>>,
        configs: Configs,
    ) -> Result<Option<History>> {
        History::from_commits_to(commits, configs, None)
    }

    /// [`History::from_commits`] read back to the commit `baseline` when it is given (the one `start`
    /// made, as its ref remembers it): a session declared by any other commit on the way is not the
    /// session but a [`Foreign`] one. `None` also when `baseline` is never reached.
    pub fn from_commits_to(
        commits: impl IntoIterator<Item = Result<(String, String)>>,
        configs: Configs,
        baseline: Option<&str>,
    ) -> Result<Option<History>> {
        let mut iterations: Vec<(String, Iteration)> = Vec::new();
        let mut skipped: Vec<Skip> = Vec::new();
        let mut foreign = Foreign::default();
        let mut baseline_seen = false;
        // the attempt commit the iteration just read names: its first parent
        let mut attempt: Option<String> = None;
        let mut run: Option<Unrecorded> = None;
        for commit in commits {
            let (id, message) = commit?;
            let block = Block::from_message(&message);
            let expected_attempt = attempt.take();
            let context = || format!("commit {id} has unreadable cutile-perf trailers");
            // a block that reads as nothing the tool writes, in a commit other than the session's own
            // baseline, is a foreign commit's (a partial block typed by hand or carried in a path):
            // it records nothing, so it joins the commits that may not change the tree
            let readable = Skip::read(&block).is_ok()
                && Session::read(&block).is_ok()
                && Iteration::read(&block).is_ok();
            let block = match baseline {
                Some(baseline) if !readable && baseline != id => Block::default(),
                _ => block,
            };
            // a skip records no change: its commit joins the run of commits that may not change the
            // tree, so a skip that does is a finding and never a way around the measurement
            let skip = Skip::read(&block).with_context(context)?;
            let records = |key| block.all(key).next().is_some();
            let plain =
                block.is_empty() || skip.is_some() && !records("Iteration") && !records("Session");
            if let Some(skip) = skip.filter(|_| plain) {
                skipped.push(skip);
            }
            if plain {
                if expected_attempt.as_deref() == Some(id.as_str()) {
                    foreign.unrecorded.extend(run.take());
                } else {
                    let run = run.get_or_insert_with(|| Unrecorded {
                        newest: id.clone(),
                        oldest: id.clone(),
                    });
                    run.oldest = id;
                }
                continue;
            }
            foreign.unrecorded.extend(run.take());
            let session = Session::read(&block).with_context(context)?;
            if session.is_some() && baseline.is_some_and(|b| b != id) {
                foreign.sessions.push(id);
                continue;
            }
            let iteration = Iteration::read(&block).with_context(context)?;
            if let Some(mut iteration) = iteration {
                let is_current_baseline = !baseline_seen && iteration.status == Status::Keep;
                baseline_seen |= is_current_baseline;
                if configs == Configs::CurrentBaseline && !is_current_baseline {
                    iteration.configs = Vec::new();
                }
                attempt = iteration.attempt.clone();
                iterations.push((id.clone(), iteration));
            }
            if let Some(session) = session {
                iterations.reverse();
                skipped.reverse();
                let history = History {
                    session,
                    baseline_commit: id,
                    iterations,
                    skipped,
                    foreign,
                    estimates: BTreeMap::new(),
                    edited: Vec::new(),
                };
                history.validate()?;
                return Ok(Some(history));
            }
        }
        Ok(None)
    }

    /// Adds an iteration the verb has just committed, so that what it prints next needs no second read.
    pub fn push(&mut self, commit: String, iteration: Iteration) {
        self.iterations.push((commit, iteration));
    }

    /// Checks that iterations are numbered 0, 1, 2, ... without gaps or repeats: anything else means
    /// the history was rewritten (a squash, a dropped commit) and the record cannot be trusted.
    pub fn validate(&self) -> Result<()> {
        for (expected, (commit, iteration)) in self.iterations.iter().enumerate() {
            if iteration.number as usize != expected {
                bail!(
                    "the session history is broken: commit {} records iteration {} where iteration {expected} \
                     was expected (was the branch rebased or squashed?)",
                    short(commit),
                    iteration.number
                );
            }
        }
        if self
            .iterations
            .first()
            .is_none_or(|(_, it)| it.status != Status::Keep)
        {
            bail!("the session history is broken: the baseline commit records no kept iteration 0");
        }
        Ok(())
    }

    pub fn iterations(&self) -> impl DoubleEndedIterator<Item = &Iteration> {
        self.iterations.iter().map(|(_, it)| it)
    }

    /// The latest kept iteration: what the next attempt is compared with.
    pub fn current_baseline(&self) -> &Iteration {
        self.iterations()
            .rev()
            .find(|it| it.status == Status::Keep)
            .expect("validated: iteration 0 is kept")
    }

    /// The commit of the current baseline: its tree is the code the next attempt is measured against.
    pub fn current_baseline_commit(&self) -> &str {
        let (commit, _) = self
            .iterations
            .iter()
            .rev()
            .find(|(_, it)| it.status == Status::Keep)
            .expect("validated: iteration 0 is kept");
        commit
    }

    /// The fastest kept iteration.
    pub fn best(&self) -> &Iteration {
        self.iterations()
            .filter(|it| it.status == Status::Keep && it.latency_ms.is_some())
            .min_by(|a, b| a.latency_ms.unwrap().total_cmp(&b.latency_ms.unwrap()))
            .unwrap_or_else(|| self.current_baseline())
    }

    /// Consecutive iterations, newest backwards, that gained less than the gain threshold.
    pub fn no_gain_count(&self) -> u32 {
        let limits = &self.session.thresholds;
        self.iterations
            .iter()
            .skip(1)
            .rev()
            .take_while(|(_, it)| !limits.gained(it.status, it.change_pct))
            .count() as u32
    }

    pub fn next_number(&self) -> u32 {
        self.iterations.len() as u32
    }

    /// Whether the loop may go on, and the iteration that halted it if not.
    pub fn loop_state(&self) -> (LoopState, Option<&Iteration>) {
        match self.halted_by() {
            Some(it) if it.decision == Decision::Escalate => (LoopState::Escalated, Some(it)),
            Some(it) => (LoopState::Stopped, Some(it)),
            None => (LoopState::Running, None),
        }
    }

    /// The last iteration, if its decision halts the loop.
    pub fn halted_by(&self) -> Option<&Iteration> {
        self.iterations().last().filter(|it| it.decision.halts())
    }

    /// How many iterations the loop ran, the baseline (iteration 0) not counted: what every verb reports
    /// as `iterations`.
    pub fn steps(&self) -> usize {
        self.iterations.len().saturating_sub(1)
    }

    /// Playbook letters already tried, in order.
    pub fn tried_letters(&self) -> Vec<String> {
        self.iterations()
            .filter_map(|it| it.playbook_letter().map(str::to_string))
            .collect()
    }

    /// The letters `next` no longer offers in its list: those tried, then those skipped.
    pub fn settled_letters(&self) -> Vec<String> {
        let mut letters = self.tried_letters();
        letters.extend(self.skipped.iter().map(|s| s.letter.clone()));
        letters
    }
}

/// The session branch checked out, if HEAD is on one.
pub fn session_branch(repo: &Repo) -> Result<Option<String>> {
    Ok(repo.branch()?.filter(|b| b.starts_with(BRANCH_PREFIX)))
}

/// The commit `branch`'s baseline ref names; where it has none, a ref left under the name the branch
/// had before a rename is taken over first.
pub fn remembered_baseline(repo: &Repo, branch: &str) -> Result<Option<String>> {
    if let Some(id) = repo.remembered_baseline(branch)? {
        return Ok(Some(id));
    }
    repo.follow_renamed_sessions(BRANCH_PREFIX)?;
    repo.remembered_baseline(branch)
}

/// The session recorded on the current branch: the first-parent history from HEAD back to the
/// baseline commit. `None` when HEAD is not on a session branch or no commit carries a session.
pub fn read(repo: &Repo, configs: Configs) -> Result<Option<History>> {
    let Some(branch) = session_branch(repo)? else {
        return Ok(None);
    };
    if repo.is_unborn()? {
        return Ok(None);
    }
    // The baseline `start` remembered is the session's only source: a later commit that declares a
    // session again cannot widen it. Without that ref (a clone, or deleted), or with a stale one, the
    // newest session block is read, and never remembered: `step` refuses and `verify` reports it.
    let remembered = remembered_baseline(repo, &branch)?;
    if let Some(baseline) = &remembered {
        let history =
            History::from_commits_to(repo.first_parent_commits()?, configs, Some(baseline))?;
        if history.is_some() {
            return Ok(history);
        }
    }
    History::from_commits(repo.first_parent_commits()?, configs)
}

/// The session of the current branch, read from its baseline commit alone when the branch's
/// baseline ref names one (what the pre-commit hook needs, at a cost that does not grow with the
/// session); otherwise from the history.
pub fn session(repo: &Repo) -> Result<Option<Session>> {
    let Some(branch) = session_branch(repo)? else {
        return Ok(None);
    };
    if repo.is_unborn()? {
        return Ok(None);
    }
    if let Some(session) = remembered_session(repo, &branch)? {
        return Ok(Some(session));
    }
    Ok(read(repo, Configs::CurrentBaseline)?.map(|h| h.session))
}

/// The session in the commit that `branch`'s baseline ref names, if the ref exists and that commit
/// carries a session (a stale or foreign ref is passed over; [`read`] rewrites it).
fn remembered_session(repo: &Repo, branch: &str) -> Result<Option<Session>> {
    let Some(id) = remembered_baseline(repo, branch)? else {
        return Ok(None);
    };
    let Ok(message) = repo.message(&id) else {
        return Ok(None);
    };
    Session::read(&Block::from_message(&message))
}

/// The session on the checked-out branch, or an error saying how to get one.
pub fn require_history(repo: &Repo, configs: Configs) -> Result<History> {
    if let Some(history) = read(repo, configs)? {
        return Ok(history);
    }
    match repo.branch()? {
        Some(branch) if branch.starts_with(BRANCH_PREFIX) => Err(hinted(
            format!("branch {branch} has no cutile-perf baseline commit"),
            "start a session with `git cutile-perf start <kernel>`",
        )),
        branch => Err(hinted(
            format!(
                "not on a cutile-perf session branch (HEAD is {})",
                branch.as_deref().unwrap_or("detached")
            ),
            format!(
                "start one with `git cutile-perf start <kernel>`, or check out an existing {BRANCH_PREFIX}* \
                 branch"
            ),
        )),
    }
}

pub use crate::record::sandbox::{made_sandbox, sandbox};

/// Writes sandbox/perf_results.md from the history and returns its path.
pub fn write_table(repo: &Repo, history: &History) -> Result<PathBuf> {
    let dir = made_sandbox(repo)?;
    let path = dir.join("perf_results.md");
    std::fs::write(&path, crate::record::table::markdown(history.iterations()))?;
    Ok(path)
}

/// The iteration numbered `number`, or an error naming those there are.
pub fn iteration(history: &History, number: u32) -> Result<&Iteration> {
    entry(history, number).map(|(_, iteration)| iteration)
}

/// The commit whose tree holds the code of iteration `number`: its attempt when it was undone, else
/// itself; an error naming the iterations there are when the session has no such one.
pub fn code_commit(history: &History, number: u32) -> Result<String> {
    let (commit, iteration) = entry(history, number)?;
    Ok(iteration.attempt.clone().unwrap_or_else(|| commit.clone()))
}

/// Iteration `number` and its commit, or an error naming the iterations there are.
fn entry(history: &History, number: u32) -> Result<&(String, Iteration)> {
    (history.iterations.iter())
        .find(|(_, it)| it.number == number)
        .with_context(|| {
            Hinted::new(
                format!("the session has no iteration {number}"),
                format!(
                    "`git cutile-perf table` lists iterations 0 to {}",
                    history.next_number() - 1
                ),
            )
        })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::session::tests::{iteration, session};
    use crate::rules::decision::{Correctness, Decision};
    use crate::rules::trailers::render_message;

    pub(crate) fn history(iterations: Vec<Iteration>) -> History {
        History {
            session: session(),
            baseline_commit: "c0".into(),
            iterations: iterations
                .into_iter()
                .enumerate()
                .map(|(i, it)| (format!("c{i}"), it))
                .collect(),
            skipped: Vec::new(),
            foreign: Foreign::default(),
            estimates: BTreeMap::new(),
            edited: Vec::new(),
        }
    }

    #[test]
    fn derived_state() {
        let h = history(vec![
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            iteration(1, Status::Keep, Some(-10.0), Decision::Continue),
            iteration(2, Status::Revert, Some(5.0), Decision::TryNext),
            iteration(3, Status::Keep, Some(-1.0), Decision::Stop),
        ]);
        h.validate().unwrap();
        assert_eq!(h.current_baseline().number, 3);
        assert_eq!(h.best().number, 1);
        assert_eq!(h.no_gain_count(), 2);
        assert_eq!(h.next_number(), 4);
        assert_eq!(h.halted_by().map(|it| it.number), Some(3));
    }

    #[test]
    fn a_change_that_fits_no_letter_is_no_tried_letter() {
        let mut none = iteration(1, Status::Revert, Some(1.0), Decision::TryNext);
        none.letter = Some(crate::record::session::NO_LETTER.into());
        let mut lettered = iteration(2, Status::Keep, Some(-5.0), Decision::Continue);
        lettered.letter = Some("B".into());
        let baseline = iteration(0, Status::Keep, Some(0.0), Decision::Continue);
        let h = history(vec![baseline, none, lettered]);
        assert_eq!(h.tried_letters(), ["B"]);
    }

    #[test]
    fn gaps_are_reported() {
        let h = history(vec![
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            iteration(2, Status::Keep, Some(-10.0), Decision::Continue),
        ]);
        assert_eq!(
            h.validate().unwrap_err().to_string(),
            "the session history is broken: commit c1 records iteration 2 where iteration 1 was expected \
             (was the branch rebased or squashed?)"
        );
    }

    /// The baseline `c0` and a kept iteration `c1` on it, newest first.
    fn first_two() -> Vec<(String, String)> {
        vec![
            (
                "c1".to_string(),
                message(
                    &iteration(1, Status::Keep, Some(-6.0), Decision::Continue),
                    false,
                ),
            ),
            (
                "c0".to_string(),
                message(
                    &iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                    true,
                ),
            ),
        ]
    }

    fn message(iteration: &Iteration, with_session: bool) -> String {
        let mut block = Block::default();
        iteration.write(&mut block);
        if with_session {
            session().write(&mut block);
        }
        render_message("s", None, &block)
    }

    #[test]
    fn a_second_session_block_and_unrecorded_commits_are_foreign() {
        let mut revert = iteration(2, Status::Revert, Some(4.0), Decision::TryNext);
        revert.attempt = Some("a2".into());
        let plain = |id: &str| (id.to_string(), "a plain commit\n".to_string());
        let mut commits = vec![
            plain("p3"),
            (
                "forged".to_string(),
                message(
                    &iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                    true,
                ),
            ),
            ("c2".to_string(), message(&revert, false)),
            plain("a2"),
            plain("p2"),
            plain("p1"),
        ];
        commits.extend(first_two());
        let read = |baseline| {
            History::from_commits_to(commits.clone().into_iter().map(Ok), Configs::All, baseline)
                .unwrap()
        };
        let history = read(Some("c0")).unwrap();
        assert_eq!(history.baseline_commit, "c0");
        assert_eq!(history.next_number(), 3);
        assert_eq!(
            history.foreign,
            Foreign {
                sessions: vec!["forged".into()],
                unrecorded: vec![
                    Unrecorded {
                        newest: "p3".into(),
                        oldest: "p3".into()
                    },
                    Unrecorded {
                        newest: "p2".into(),
                        oldest: "p1".into()
                    },
                ],
            }
        );
        // without the remembered baseline the newest session block is taken, as before
        assert_eq!(read(None).unwrap().baseline_commit, "forged");
        assert!(read(Some("elsewhere")).is_none());
    }

    #[test]
    fn from_commits_reads_back_to_the_session_and_keeps_only_the_baselines_configs() {
        let mut commits = vec![
            (
                "c3".to_string(),
                message(
                    &iteration(3, Status::Revert, Some(4.0), Decision::TryNext),
                    false,
                ),
            ),
            ("x".to_string(), "a commit of someone else\n".to_string()),
            (
                "c2".to_string(),
                message(
                    &iteration(2, Status::Keep, Some(-6.0), Decision::Continue),
                    false,
                ),
            ),
        ];
        commits.extend(first_two());
        commits.push(("before".to_string(), "older history\n".to_string()));
        let read = |configs| {
            History::from_commits(commits.clone().into_iter().map(Ok), configs)
                .unwrap()
                .unwrap()
        };
        let lean = read(Configs::CurrentBaseline);
        assert_eq!(lean.baseline_commit, "c0");
        let with_configs: Vec<u32> = lean
            .iterations()
            .filter(|it| !it.configs.is_empty())
            .map(|it| it.number)
            .collect();
        assert_eq!(with_configs, [2]);
        assert_eq!(lean.current_baseline().number, 2);
        let full = read(Configs::All);
        assert!(full.iterations().all(|it| !it.configs.is_empty()));
        assert!(
            History::from_commits(commits[..4].iter().cloned().map(Ok), Configs::All)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_reverted_iterations_code_is_its_attempt() {
        let mut reverted = iteration(1, Status::Revert, Some(4.0), Decision::TryNext);
        reverted.attempt = Some("a1".into());
        let history = History {
            session: session(),
            baseline_commit: "c0".into(),
            iterations: vec![
                (
                    "c0".into(),
                    iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                ),
                ("c1".into(), reverted),
            ],
            skipped: Vec::new(),
            foreign: Default::default(),
            estimates: BTreeMap::new(),
            edited: Vec::new(),
        };
        assert_eq!(code_commit(&history, 0).unwrap(), "c0");
        assert_eq!(code_commit(&history, 1).unwrap(), "a1");
        let err = iteration_or_err(&history, 7);
        assert!(err.contains("no iteration 7"), "{err}");
        assert!(err.contains("iterations 0 to 1"), "{err}");
        // past the last iteration: the same refusal, not an index out of bounds
        let err = crate::rules::hint::shown(&code_commit(&history, 2).unwrap_err());
        assert!(err.starts_with("the session has no iteration 2"), "{err}");
        assert!(err.ends_with("lists iterations 0 to 1"), "{err}");
    }

    /// An iteration with `letter` and configs `t0`, `t1`, ... of these latencies.
    fn tried(number: u32, status: Status, letter: &str, values: &[f64]) -> Iteration {
        let mut it = iteration(number, status, Some(1.0), Decision::TryNext);
        it.letter = Some(letter.into());
        it.configs = crate::rules::verdict::tests::run(values);
        it
    }

    fn with_configs(mut it: Iteration, values: &[f64]) -> Iteration {
        it.configs = crate::rules::verdict::tests::run(values);
        it
    }

    /// Iteration 0 at 1 ms for `t0`, `t1` and `t2`, whose noise `start` measured as 0.2%, 1% and none.
    fn measured_session(iterations: Vec<Iteration>) -> History {
        let mut all = vec![with_configs(
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            &[1.0, 1.0, 1.0],
        )];
        all.extend(iterations);
        let mut h = history(all);
        h.session.spread = [("t0", 0.2), ("t1", 1.0)]
            .map(|(test, spread_pct)| crate::rules::stats::Spread {
                pass: "forward".into(),
                test: test.into(),
                spread_pct,
            })
            .to_vec();
        h
    }

    #[test]
    fn a_revert_that_sped_a_config_up_beyond_its_noise_is_a_variant() {
        // t0 0.6% faster (beyond its 0.5% floor), t1 4% slower (beyond its 1%), t2 within the 2% gain
        let h = measured_session(vec![tried(1, Status::Revert, "G", &[0.994, 1.04, 0.99])]);
        assert_eq!(
            h.variants(),
            [Variant {
                letter: "G".into(),
                iteration: 1,
                faster: vec!["t0".into()],
                slower: vec!["t1".into()],
            }]
        );
        assert_eq!(
            h.variants()[0].sentence(),
            "variant of G: iteration 1 sped up t0 and slowed t1; try it on the shapes that gained \
             (`step --opt G` again)"
        );
    }

    #[test]
    fn a_variant_needs_a_gain_beyond_noise_a_measured_revert_and_one_try() {
        // no config gained beyond its noise: t0 0.4% (floor 0.5%), t1 0.9% (its 1%), t2 1.9% (gain 2%)
        let within = measured_session(vec![tried(1, Status::Revert, "G", &[0.996, 0.991, 0.981])]);
        assert_eq!(within.variants(), []);
        // only t2 gained, by more than the gain threshold that stands in for its unmeasured noise
        let t2 = measured_session(vec![tried(1, Status::Revert, "G", &[1.0, 1.03, 0.97])]);
        assert_eq!(t2.variants()[0].faster, ["t2"]);
        assert_eq!(t2.variants()[0].slower, ["t1"]);
        // a kept change, a crash and a FAIL leave none
        let mut fail = tried(1, Status::Revert, "G", &[0.9, 1.1, 1.0]);
        fail.correctness = Correctness::Fail;
        for it in [
            tried(1, Status::Keep, "G", &[0.9, 1.1, 1.0]),
            tried(1, Status::Crash, "G", &[0.9, 1.1, 1.0]),
            fail,
        ] {
            assert_eq!(measured_session(vec![it.clone()]).variants(), [], "{it:?}");
        }
        // tried a second time (the variant itself), or skipped: not offered again
        let twice = measured_session(vec![
            tried(1, Status::Revert, "G", &[0.9, 1.1, 1.0]),
            tried(2, Status::Revert, "g", &[0.9, 1.1, 1.0]),
        ]);
        assert_eq!(twice.variants(), []);
        let mut skipped = measured_session(vec![tried(1, Status::Revert, "G", &[0.9, 1.1, 1.0])]);
        skipped.skipped.push(Skip {
            letter: "G".into(),
            why: "w".into(),
        });
        assert_eq!(skipped.variants(), []);
    }

    #[test]
    fn a_variant_compares_with_the_kept_iteration_before_it() {
        // against iteration 1, t1 did not move (against iteration 0 it would be 5% slower)
        let h = measured_session(vec![
            tried(1, Status::Keep, "B", &[0.5, 1.05, 1.0]),
            tried(2, Status::Revert, "G", &[0.49, 1.05, 1.03]),
        ]);
        assert_eq!(
            h.variants(),
            [Variant {
                letter: "G".into(),
                iteration: 2,
                faster: vec!["t0".into()],
                slower: vec!["t2".into()],
            }]
        );
        // without every iteration's configs (Configs::CurrentBaseline) none is found
        let mut lean = measured_session(vec![tried(1, Status::Revert, "G", &[0.9, 1.1, 1.0])]);
        lean.iterations[0].1.configs.clear();
        assert_eq!(lean.variants(), []);
    }

    /// A paired estimate of `t0`, `t1` and `t2` that moved by these percents (positive is slower).
    fn paired(changes: &[f64]) -> Estimate {
        use crate::rules::decision::{Aggregate, ConfigEstimate};
        let configs = changes
            .iter()
            .enumerate()
            .map(|(i, &change_pct)| ConfigEstimate {
                pass: "forward".into(),
                test: format!("t{i}"),
                rounds: 8,
                on_record_means: false,
                baseline_ms: 1.0,
                candidate_ms: 1.0 + change_pct / 100.0,
                change_pct,
                low_pct: change_pct - 0.1,
                high_pct: change_pct + 0.1,
            })
            .collect();
        let aggregate = Aggregate {
            baseline_ms: 1.0,
            candidate_ms: 1.0,
            improvement_pct: 0.0,
            low_pct: -0.1,
            high_pct: 0.1,
        };
        Estimate {
            rounds: 8,
            configs,
            aggregate,
        }
    }

    #[test]
    fn a_variant_reads_the_changes_its_step_measured_not_the_latencies_recorded_at_start() {
        // against the latencies recorded at start t0 looks 1% faster and t1 unmoved; the step's paired
        // rounds measured t0 0.6% slower, t1 2.4% slower (the config it was reverted for) and t2 3% faster
        let mut h = measured_session(vec![tried(1, Status::Revert, "G", &[0.99, 1.0, 1.0])]);
        h.estimates = BTreeMap::from([(1, paired(&[0.6, 2.4, -3.0]))]);
        assert_eq!(
            h.variants(),
            [Variant {
                letter: "G".into(),
                iteration: 1,
                faster: vec!["t2".into()],
                slower: vec!["t0".into(), "t1".into()],
            }]
        );
        // the same step without its estimate (no evidence note): the trailers against the start's
        h.estimates.clear();
        assert_eq!(h.variants()[0].faster, ["t0"]);
    }

    #[test]
    fn a_skip_commit_is_read_as_skipped_and_may_not_change_the_tree() {
        let skip = |id: &str, letter: &str| {
            let mut block = Block::default();
            Skip {
                letter: letter.into(),
                why: format!("why {letter}"),
            }
            .write(&mut block);
            (id.to_string(), render_message("skip", None, &block))
        };
        let mut commits = vec![skip("s2", "B"), skip("s1", "A")];
        commits.extend(first_two());
        let history =
            History::from_commits_to(commits.into_iter().map(Ok), Configs::All, Some("c0"))
                .unwrap()
                .unwrap();
        assert_eq!(
            history.skipped,
            [
                Skip {
                    letter: "A".into(),
                    why: "why A".into()
                },
                Skip {
                    letter: "B".into(),
                    why: "why B".into()
                }
            ]
        );
        assert_eq!(history.next_number(), 2);
        // both skips are one run that `foreign_findings` holds to changing nothing
        assert_eq!(
            history.foreign.unrecorded,
            [Unrecorded {
                newest: "s2".into(),
                oldest: "s1".into()
            }]
        );
        let mut settled = history.clone();
        settled.iterations[1].1.letter = Some("K".into());
        assert_eq!(settled.settled_letters(), ["K", "A", "B"]);
    }

    #[test]
    fn a_skip_beside_an_iteration_is_no_skip() {
        let mut block = Block::default();
        iteration(2, Status::Keep, Some(-6.0), Decision::Continue).write(&mut block);
        Skip {
            letter: "A".into(),
            why: "w".into(),
        }
        .write(&mut block);
        let mut commits = vec![("c2".to_string(), render_message("s", None, &block))];
        commits.extend(first_two());
        let history = History::from_commits(commits.into_iter().map(Ok), Configs::All)
            .unwrap()
            .unwrap();
        assert_eq!(history.skipped, []);
        assert_eq!(history.next_number(), 3);
    }

    #[test]
    fn a_partial_block_in_a_foreign_commit_records_nothing() {
        let partial = "p\n\nCutile-Perf-Iteration: 2\nCutile-Perf-Status: keep\n".to_string();
        let mut commits = vec![("p".to_string(), partial)];
        commits.extend(first_two());
        let read = |baseline| {
            History::from_commits_to(commits.clone().into_iter().map(Ok), Configs::All, baseline)
        };
        let history = read(Some("c0")).unwrap().unwrap();
        assert_eq!(history.next_number(), 2);
        assert_eq!(
            history.foreign.unrecorded,
            [Unrecorded {
                newest: "p".into(),
                oldest: "p".into()
            }]
        );
        // without the baseline's own commit to read back to, nothing says whose block it is
        assert!(read(None).is_err());
    }

    fn iteration_or_err(history: &History, number: u32) -> String {
        crate::rules::hint::shown(&super::iteration(history, number).unwrap_err())
    }
}
