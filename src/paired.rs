//! Paired measurement: every `step` benchmarks the current baseline's code beside the candidate, in
//! alternating rounds (A B, B A, ...) on the same GPU, until [`verdict`] can decide or the budget cannot
//! fit another round; each round after the first in fresh workers, from round 3 on started (imports and
//! collection, not their GPU contexts) while the round before measured. Each side's code runs from a
//! detached worktree of its own under the git dir, so the user's work tree is never touched and an edit
//! made during the step cannot reach the measurement; a worktree is removed with its worker, at the
//! step's end or, for the worker that holds the new baseline's code, when that worker ends
//! ([`Held::keep_as_baseline`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::benchmark_run;
use crate::decision::{Decided, Decision};
use crate::evidence::RunFile;
use crate::git::Repo;
use crate::history::sandbox;
use crate::pytest::{BenchmarkRun, Bytecode, Pytest};
use crate::runner::Workers;
use crate::session::Session;
use crate::ui::Progress;
use crate::verdict::{self, NoiseFloor, Round, Verdict};
use crate::workers::lasting::{self, Code, WorkerEnv};
use crate::workers::{Side, Worker, say_cold};

/// A detached worktree of a commit, removed when dropped (with the folder it was made in, if any),
/// unless it is kept with the worker that runs from it, or it holds an edit: tracebacks, logs and JUnit
/// files point into it, so an editor may follow them there, and an edit is never removed ([`edited_trees`]
/// names it until it is taken to the work tree or undone).
pub struct CodeTree<'a> {
    repo: &'a Repo,
    pub path: PathBuf,
    /// The folder the tree was made in (a worker's home), removed with it.
    home: Option<PathBuf>,
    kept: bool,
    /// Whether its checkout finished: a half-made tree holds no edit of anyone's.
    made: bool,
}

impl<'a> CodeTree<'a> {
    /// A tree of `commit` for this process alone (`cutile-perf/baseline-<pid>`).
    pub fn add(repo: &'a Repo, commit: &str) -> Result<CodeTree<'a>> {
        let path = repo.git_path(&format!("cutile-perf/baseline-{}", std::process::id()))?;
        CodeTree::checkout(repo, path, None, commit)
    }

    /// A tree of `commit` in `home/tree`, the whole `home` removed with it.
    pub fn in_home(repo: &'a Repo, home: &Path, commit: &str) -> Result<CodeTree<'a>> {
        CodeTree::checkout(repo, home.join("tree"), Some(home.to_path_buf()), commit)
    }

    /// Why the tree is not its commit's code any more (a path written into it, or git unable to say),
    /// if it is not.
    pub fn changed(&self) -> Option<String> {
        match self.repo.worktree_changes(&self.path) {
            Ok(paths) if paths.is_empty() => None,
            Ok(paths) => Some(format!(
                "its code beside the work tree was changed: {}",
                first_few(&paths)
            )),
            Err(e) => Some(format!("cannot tell whether its code was changed: {e:#}")),
        }
    }

    /// Removes what git does not track from its `__pycache__`s ([`Bytecode::for_tree`]).
    pub fn clear_bytecode(&self) -> Result<()> {
        Bytecode::for_tree(&self.path).map(|_| ())
    }

    /// The bytecode in its `__pycache__`s that git does not track, with the tree's path (or why it
    /// cannot be told), if any: since it was last cleared, no test process wrote any.
    pub fn bytecode(&self) -> Option<String> {
        match Bytecode::in_tree(&self.path) {
            Ok(paths) if paths.is_empty() => None,
            Ok(paths) => Some(format!("{}: {}", self.path.display(), first_few(&paths))),
            Err(e) => Some(format!(
                "{}: cannot list its bytecode: {e:#}",
                self.path.display()
            )),
        }
    }

    /// The tree a kept worker runs from, owned (removed when dropped) from now on.
    fn adopt(repo: &'a Repo, home: &Path) -> CodeTree<'a> {
        CodeTree {
            repo,
            path: home.join("tree"),
            home: Some(home.to_path_buf()),
            kept: false,
            made: true,
        }
    }

    fn checkout(
        repo: &'a Repo,
        path: PathBuf,
        home: Option<PathBuf>,
        commit: &str,
    ) -> Result<CodeTree<'a>> {
        if path.exists() {
            // left by a killed run of this same pid number: it is ours to replace, but for an edit in it
            refuse_edited_trees(repo)?;
            let _ = repo.git(&["worktree", "remove", "--force", &path.to_string_lossy()]);
            let _ = std::fs::remove_dir_all(&path);
        }
        // owned from here: a failed checkout leaves nothing behind either
        let mut tree = CodeTree {
            repo,
            path,
            home,
            kept: false,
            made: false,
        };
        repo.git(&[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            &tree.path.to_string_lossy(),
            commit,
        ])
        .context("could not check out a side's code beside the work tree")?;
        crate::ignored::copy_into(repo, &tree.path)?;
        tree.made = true;
        Ok(tree)
    }
}

impl Drop for CodeTree<'_> {
    fn drop(&mut self) {
        if self.kept || (self.made && !edits_in(self.repo, &self.path).is_empty()) {
            return;
        }
        // after Ctrl-C too: git is not cut short while it puts things back
        crate::process::restoring(|| {
            let _ = self.repo.git(&[
                "worktree",
                "remove",
                "--force",
                &self.path.to_string_lossy(),
            ]);
            // a worker's tree is one git knows, removed with its admin files above; only the
            // process's own tree may have been left by a killed run of the same pid number
            if self.home.is_none() {
                let _ = self.repo.git(&["worktree", "prune"]);
            }
        });
        if let Some(home) = &self.home {
            let _ = std::fs::remove_dir_all(home);
        }
    }
}

/// The first three of `paths`, and how many more.
fn first_few(paths: &[String]) -> String {
    let shown = paths[..paths.len().min(3)].join(", ");
    match paths.len().saturating_sub(3) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// The paths an edit left in the worktree at `path` (git's status there): none when it is its commit's
/// code, or not a worktree git can read.
pub fn edits_in(repo: &Repo, path: &Path) -> Vec<String> {
    repo.worktree_changes(path).unwrap_or_default()
}

/// Every side's worktree under the git dir (a worker's, `cutile-perf/workers/<home>/tree`, or a
/// command's own, `cutile-perf/baseline-<pid>`) that holds an edit, with the edited paths.
pub fn edited_trees(repo: &Repo) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let entries = |dir: PathBuf| {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
    };
    let homes = entries(repo.git_path(lasting::WORKERS_DIR)?).map(|home| home.join("tree"));
    let own = entries(repo.git_path("cutile-perf")?).filter(|path| {
        (path.file_name().unwrap_or_default().to_string_lossy()).starts_with("baseline-")
    });
    Ok(homes
        .chain(own)
        .filter(|tree| tree.is_dir())
        .map(|tree| {
            let edits = edits_in(repo, &tree);
            (tree, edits)
        })
        .filter(|(_, edits)| !edits.is_empty())
        .collect())
}

/// Refuses while a side's worktree holds an edit, before anything could remove it: names the files and
/// how to take them to the work tree.
pub fn refuse_edited_trees(repo: &Repo) -> Result<()> {
    let edited = edited_trees(repo)?;
    let Some((first, _)) = edited.first() else {
        return Ok(());
    };
    let listed: Vec<String> = (edited.iter())
        .map(|(tree, edits)| format!("{}: {}", tree.display(), edits.join(", ")))
        .collect();
    let tree = shell_quoted(first);
    Err(crate::hint::hinted(
        format!(
            "a side's code beside the work tree was edited there (where tracebacks and logs point), and \
             the tool never removes an edit:\n  {}",
            listed.join("\n  ")
        ),
        format!(
            "take the edit to your work tree (from its top: `git -C {tree} diff HEAD | git apply`, and copy \
             any new file), then undo it there (`git -C {tree} reset -q --hard && git -C {tree} clean -fdq`) \
             and run the command again"
        ),
    ))
}

/// `path` quoted for a POSIX shell.
fn shell_quoted(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

/// One side's code and the warm worker that runs from it: a worktree of its own (never the user's
/// work tree, which they edit next) that lives exactly as long as the worker, past the step too.
pub struct Held<'a> {
    /// Declared first: the worker ends before its tree is removed.
    pub worker: Option<Worker>,
    pub tree: CodeTree<'a>,
    pub code: Code,
    env: WorkerEnv,
    /// Whether its worker may outlive the command ([`Workers::Lasting`]).
    workers: Workers,
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
        let adopted =
            match (kept.cannot_serve(&wanted.code, &wanted.env)).or_else(|| tree.changed()) {
                Some(why) => Err(why),
                None => Worker::adopt(&kept, wanted.side),
            };
        match adopted {
            Ok(worker) => {
                progress.line(&format!(
                    "the baseline's warm worker (pid {}) lives on from an earlier command",
                    worker.pid()
                ));
                return Ok(Held {
                    worker: Some(worker),
                    tree,
                    code: wanted.code,
                    env: wanted.env,
                    workers,
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
            match Worker::start(&runner, wanted.side, &home) {
                Ok(worker) => Some(worker),
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
    })
}

impl Held<'_> {
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

    /// Ends their workers, and says so where one was warm: the loop has halted (`decision`), and until
    /// the user says `--continue` none should idle on a GPU that others may want.
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

/// Removes the dumps of every code but `tree`'s (the baseline's after a step: the next step compares its
/// candidate with them): what they gave is in the evidence notes, so the folder stays one code's size
/// however long the session.
pub fn prune_dumps(repo: &Repo, tree: &str) {
    let dir = sandbox(repo).join("dumps");
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if entry.file_name() != tree {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Removes the logs of the workers earlier commands started (`sandbox/worker-<side>-<pid>-<n>.log`), but
/// those of kept workers, which still write to theirs: this command's stay, for the reasons that name
/// them, until the next step, so the folder stays one step's size however long the session.
pub fn prune_worker_logs(repo: &Repo) {
    let kept: Vec<std::ffi::OsString> = (lasting::all(repo).into_iter().flatten())
        .filter_map(|(_, kept)| kept.log.file_name().map(ToOwned::to_owned))
        .collect();
    let this = std::process::id().to_string();
    for entry in std::fs::read_dir(sandbox(repo))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let started_by = name
            .strip_prefix("worker-")
            .and_then(|name| name.strip_suffix(".log"))
            .and_then(|home| home.rsplit('-').nth(1));
        if started_by.is_some_and(|pid| pid != this) && !kept.contains(&entry.file_name()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Where cuda-tile writes the kernels each side's runs compile: a folder per code, named by its tree,
/// so that a baseline's dumps belong to the code its worker holds, whichever step's worker wrote them.
pub fn dumps_of(repo: &Repo, tree: &str) -> PathBuf {
    sandbox(repo).join("dumps").join(tree)
}

/// How the paired rounds ended.
pub enum Paired {
    Decided(Decided),
    Crashed(String),
    Interrupted,
}

/// One GPU's baseline and candidate sides, and the perf cases they measure there.
pub struct Pair<'a> {
    /// The GPU, as `CUDA_VISIBLE_DEVICES` names it; none: whatever the environment gives (one GPU).
    pub gpu: Option<String>,
    pub candidate: Side<'a>,
    pub baseline: Side<'a>,
    /// The perf cases (JUnit ids) measured on this GPU, [`split`] among the pairs; none: every case.
    pub cases: Option<Vec<String>>,
}

impl Pair<'_> {
    /// What this pair runs in a round: its own cases, of those still `open` after the first round; `None`
    /// every case; an empty list nothing (the pair sits the round out).
    fn cases_in(&self, open: Option<&[String]>) -> Option<Vec<String>> {
        match (open, &self.cases) {
            (None, mine) => mine.clone(),
            (Some(open), None) => Some(open.to_vec()),
            (Some(open), Some(mine)) => Some(
                open.iter()
                    .filter(|case| mine.contains(case))
                    .cloned()
                    .collect(),
            ),
        }
    }
}

/// The perf cases of each of `pairs` GPUs: the cases in sorted order dealt out in turn, so that the GPUs
/// share them evenly and a config is measured on the same GPU in every round and every step (while the
/// cases and the number of GPUs stay the same).
pub fn split(cases: &[String], pairs: usize) -> Vec<Vec<String>> {
    let mut sorted = cases.to_vec();
    sorted.sort();
    sorted.dedup();
    let mut shares = vec![Vec::new(); pairs.max(1)];
    let count = shares.len();
    for (index, case) in sorted.into_iter().enumerate() {
        shares[index % count].push(case);
    }
    shares
}

/// The name of a benchmark run of the rounds: `<prefix>-<round>-<side>` on the first GPU (as with one
/// GPU), `<prefix>-<round>-gpu<gpu>-<side>` on another (`evidence::RunFile::of_round` reads both).
pub fn run_name(prefix: &str, round: usize, other_gpu: Option<&str>, side: &str) -> String {
    match other_gpu {
        None => format!("{prefix}-{round}-{side}"),
        Some(gpu) => format!("{prefix}-{round}-gpu{gpu}-{side}"),
    }
}

/// The sides of one step's paired rounds, a pair per GPU (the first pair also runs the checks), and
/// what decides between them.
pub struct Rounds<'a> {
    pub pairs: Vec<Pair<'a>>,
    pub session: &'a Session,
    pub floor: NoiseFloor,
    pub deadline: Instant,
    /// Whether the sides' processes have measured a round: the next round is then measured by fresh ones.
    pub measured: bool,
    /// No re-roll: after the first round, whether the candidate compiled and launched what the baseline
    /// does (it may add what it read to the runs); then nothing more is measured.
    pub no_reroll: Option<AlikeCheck<'a>>,
}

impl<'a> Rounds<'a> {
    /// The first GPU's pair: correctness and the unseen-input checks run there.
    pub fn first(&mut self) -> &mut Pair<'a> {
        &mut self.pairs[0]
    }
}

/// The no-re-roll check the rounds make after the first round.
pub type AlikeCheck<'a> = &'a dyn Fn(&mut Vec<RunFile>) -> bool;

/// What one pair's part of a round gave: its runs' files, its measurements or why it stopped, and when
/// both its sides were ready to measure (since the round began) and how many cases each side ran.
struct PairRound {
    files: Vec<RunFile>,
    ended: PairEnded,
    ready_after: Duration,
    cases: usize,
}

enum PairEnded {
    Measured(Round),
    Crashed(String),
    Interrupted,
}

/// The shared facts of one round every pair runs by.
struct RoundPlan<'a> {
    prefix: &'a str,
    number: usize,
    began: Instant,
    candidate_first: bool,
    /// Whether each side starts its next round's worker as it begins to measure ([`Side::stand_by`]).
    stand_by: bool,
    session: &'a Session,
    /// The workers of every pair: ours, idle or measuring on another GPU, not someone else's.
    ours: &'a [u32],
}

/// Runs rounds of the baseline and the candidate until the verdict is decided; when the next round would
/// not fit before the deadline, decides on what there is and says so. Each GPU's pair runs its part of a
/// round (its own cases, A B or B A) beside the others; the round's verdict pools them all. Each run's
/// JUnit file is added to `evidence` ([`run_name`]), pair by pair in the pool's order.
pub fn measure(sides: &mut Rounds, prefix: &str, evidence: &mut Vec<RunFile>) -> Result<Paired> {
    let limits = &sides.session.thresholds;
    let floor = &sides.floor;
    let mut rounds: Vec<Round> = Vec::new();
    let mut times: Vec<verdict::RoundTime> = Vec::new();
    // round 1 runs every case; a later one only those of the configs still open
    let mut open: Option<Vec<String>> = None;
    loop {
        let started = Instant::now();
        if sides.measured {
            // a round is an independent sample only in processes of its own (`verdict` says why): every
            // old worker ends here, and the new ones import and collect side by side, standing by until
            // the round lets them make their GPU contexts (`pair_round`)
            for pair in sides.pairs.iter_mut() {
                if pair
                    .cases_in(open.as_deref())
                    .is_none_or(|cases| !cases.is_empty())
                {
                    pair.candidate.redraw();
                    pair.baseline.redraw();
                }
            }
        }
        let ours: Vec<u32> = sides
            .pairs
            .iter()
            .flat_map(|pair| [&pair.candidate, &pair.baseline])
            .flat_map(|side| side.worker_pids())
            .collect();
        let plan = RoundPlan {
            prefix,
            number: rounds.len() + 1,
            began: started,
            candidate_first: verdict::candidate_first(rounds.len()),
            // from the second round on (a step that needs one measures near ties, which take more; one
            // decided in its first starts nothing it does not use)
            stand_by: (2..verdict::MAX_ROUNDS).contains(&(rounds.len() + 1)),
            session: sides.session,
            ours: &ours,
        };
        let several = sides.pairs.len() > 1;
        let parts: Vec<Result<PairRound>> = std::thread::scope(|scope| {
            let running: Vec<_> = sides
                .pairs
                .iter_mut()
                .enumerate()
                .map(|(index, pair)| {
                    let cases = pair.cases_in(open.as_deref());
                    let plan = &plan;
                    // the first GPU's runs keep the names they have with one GPU
                    let other_gpu = (index > 0).then(|| pair.gpu.clone()).flatten();
                    scope.spawn(move || {
                        pair_round(pair, plan, other_gpu.as_deref(), several, cases.as_deref())
                    })
                })
                .collect();
            running
                .into_iter()
                .map(|part| part.join().expect("a GPU's part of the round panicked"))
                .collect()
        });
        let mut round = Round::default();
        let mut stopped = None;
        let mut time = verdict::RoundTime {
            took: Duration::ZERO,
            before_measuring: Duration::ZERO,
            cases: 0,
        };
        for part in parts {
            let PairRound {
                files,
                ended,
                ready_after,
                cases,
            } = part?;
            evidence.extend(files);
            time.before_measuring = time.before_measuring.max(ready_after);
            time.cases = time.cases.max(cases);
            match ended {
                PairEnded::Measured(measured) => {
                    round.baseline.extend(measured.baseline);
                    round.candidate.extend(measured.candidate);
                }
                other => {
                    stopped.get_or_insert(other);
                }
            }
        }
        match stopped {
            Some(PairEnded::Crashed(why)) => return Ok(Paired::Crashed(why)),
            Some(PairEnded::Interrupted) => return Ok(Paired::Interrupted),
            _ => {}
        }
        rounds.push(round);
        sides.measured = true;
        times.push(verdict::RoundTime {
            took: started.elapsed(),
            ..time
        });
        if rounds.len() == 1 && sides.no_reroll.is_some_and(|alike| alike(evidence)) {
            // the same work measured again could only draw another sample: decided on what there is
            return Ok(
                match verdict::decide_anyway(&rounds, limits, floor, "compiled alike") {
                    Ok(decided) => Paired::Decided(decided),
                    Err(e) => Paired::Crashed(e.to_string()),
                },
            );
        }
        let ambiguous = match verdict::decide(&rounds, limits, floor) {
            Ok(Verdict::Decided(decided)) => return Ok(Paired::Decided(decided)),
            Ok(Verdict::NeedMoreRounds {
                ambiguous,
                open: cases,
                ..
            }) => {
                open = Some(cases);
                ambiguous
            }
            Err(e) => return Ok(Paired::Crashed(e.to_string())),
        };
        let left = sides.deadline.saturating_duration_since(Instant::now());
        let next_cases = (sides.pairs.iter())
            .filter_map(|pair| pair.cases_in(open.as_deref()).map(|cases| cases.len()))
            .max()
            .unwrap_or_default();
        if !verdict::another_round_fits(&times, next_cases, left) {
            let estimate = verdict::round_estimate(&times, next_cases).unwrap_or_default();
            let why = format!(
                "the next round, of {next_cases} case{} a side, would take about {:.0} s and {:.0} s \
                 of the budget are left",
                if next_cases == 1 { "" } else { "s" },
                estimate.as_secs_f64(),
                left.as_secs_f64()
            );
            return Ok(match verdict::decide_anyway(&rounds, limits, floor, &why) {
                Ok(decided) => Paired::Decided(decided),
                Err(e) => Paired::Crashed(e.to_string()),
            });
        }
        sides.pairs[0].candidate.runner.progress.line(&format!(
            "round {}: not decided yet ({ambiguous}); measuring another round",
            rounds.len()
        ));
    }
}

/// One pair's part of a round on its GPU: `cases` (none: every case; empty: nothing to run), one side
/// after the other in the round's order, so that only one side measures on that GPU at a time. The GPU
/// watch reads nvidia-smi's first GPU only, so only the runs on GPU 0 (or the environment's) keep one.
fn pair_round(
    pair: &mut Pair,
    plan: &RoundPlan,
    other_gpu: Option<&str>,
    several: bool,
    cases: Option<&[String]>,
) -> Result<PairRound> {
    let mut part = PairRound {
        files: Vec::new(),
        ended: PairEnded::Measured(Round::default()),
        ready_after: Duration::ZERO,
        cases: 0,
    };
    if cases.is_some_and(<[String]>::is_empty) {
        return Ok(part);
    }
    let on_gpu = match (several, &pair.gpu) {
        (true, Some(gpu)) => format!(" on GPU {gpu}"),
        _ => String::new(),
    };
    // both sides' start-ups (their GPU contexts among them) end before either measures: each then
    // measures beside the other's idle context, whatever the order, the other's worker held still. The
    // new workers make their contexts one at a time, the side measuring first first: on an H200, with
    // the candidate's always made first and beside the old workers' teardown, the candidate's processes
    // of identical code read 1-5% slower on a microsecond config in many rounds, the baseline's never
    let (first, second) = match plan.candidate_first {
        true => (&mut pair.candidate, &mut pair.baseline),
        false => (&mut pair.baseline, &mut pair.candidate),
    };
    first.ready()?;
    second.ready()?;
    part.ready_after = plan.began.elapsed();
    let mut measured = Round::default();
    for run_candidate in [plan.candidate_first, !plan.candidate_first] {
        let (runner, other, side, into) = if run_candidate {
            (
                &mut pair.candidate,
                &pair.baseline,
                "candidate",
                &mut measured.candidate,
            )
        } else {
            (
                &mut pair.baseline,
                &pair.candidate,
                "baseline",
                &mut measured.baseline,
            )
        };
        // the side's next worker starts up beside this side's own measurement, from its first case: each
        // side measures beside the same part of a start-up. On an H200, with both started as the round
        // began, the side measuring first had the start-up's busiest seconds beside its first configs and
        // the other side a start-up already under way, and rope's first-measured 2 us configs read 3-4%
        // apart by order.
        if plan.stand_by {
            runner.stand_by();
        }
        let ours: Vec<u32> = (plan.ours.iter().copied())
            .chain(runner.worker_pids())
            .chain(other.worker_pids())
            .collect();
        let _held = other.hold_while(runner)?;
        let (outcome, file) = benchmark_run::benchmark(
            runner,
            plan.session.statistic,
            &run_name(plan.prefix, plan.number, other_gpu, side),
            &format!("round {} {side}{on_gpu}", plan.number),
            // nvidia-smi's view is of its first GPU: watched where that is the one measuring
            plan.session.gpu.is_some() && pair.gpu.as_deref().is_none_or(|gpu| gpu == "0"),
            &ours,
            cases,
        )?;
        part.files.extend(file.map(|file| RunFile {
            cuda_device: pair.gpu.clone(),
            ..file
        }));
        match outcome {
            BenchmarkRun::Measured(configs) => {
                let tests: std::collections::HashSet<&str> =
                    configs.iter().map(|m| m.test.as_str()).collect();
                part.cases = part.cases.max(tests.len());
                *into = configs;
            }
            BenchmarkRun::Crash(why) => {
                part.ended = PairEnded::Crashed(match side {
                    "baseline" => format!("the baseline's run (round {}): {why}", plan.number),
                    _ => why,
                });
                return Ok(part);
            }
            BenchmarkRun::Interrupted => {
                part.ended = PairEnded::Interrupted;
                return Ok(part);
            }
        }
    }
    part.ended = PairEnded::Measured(measured);
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn the_cases_are_dealt_out_in_sorted_order_so_each_stays_on_one_gpu() {
        let cases = ids(&["t::p[c]", "t::p[a]", "t::p[d]", "t::p[b]", "t::p[e]"]);
        assert_eq!(
            split(&cases, 2),
            [
                ids(&["t::p[a]", "t::p[c]", "t::p[e]"]),
                ids(&["t::p[b]", "t::p[d]"])
            ]
        );
        // the order they come in does not matter, nor does a case listed twice
        let mut again = cases.clone();
        again.reverse();
        again.push("t::p[a]".into());
        assert_eq!(split(&again, 2), split(&cases, 2));
        assert_eq!(
            split(&cases, 1),
            [ids(&[
                "t::p[a]", "t::p[b]", "t::p[c]", "t::p[d]", "t::p[e]"
            ])]
        );
        // more GPUs than cases: the others measure nothing
        assert_eq!(split(&cases[..1], 3), [ids(&["t::p[c]"]), vec![], vec![]]);
        assert_eq!(split(&cases, 0).len(), 1);
    }

    #[test]
    fn runs_on_the_first_gpu_keep_their_names_and_the_others_name_theirs() {
        assert_eq!(run_name("round", 2, None, "candidate"), "round-2-candidate");
        assert_eq!(
            run_name("confirm-round", 1, Some("3"), "baseline"),
            "confirm-round-1-gpu3-baseline"
        );
    }
}
