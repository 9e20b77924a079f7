//! The sides of a step's attempt, set up before anything is measured: each GPU's share of the perf
//! cases, the two sides' code, each GPU's runners, and each side's code and worker held there.

use std::path::PathBuf;

use anyhow::Result;

use crate::measure::paired::{self, Held, Pair, Settings, Wanted, dumps_of};
use crate::record::evidence::Evidence;
use crate::record::history::History;
use crate::system::git::Repo;
use crate::system::pytest::Pytest;
use crate::system::runner::Workers;
use crate::system::ui::Progress;
use crate::system::workers::Side;
use crate::system::workers::lasting::{Code, WorkerEnv};
use crate::system::workers::spare::{self, Pool, Spare};

/// One GPU's two sides' code and workers after the attempt.
pub struct HeldSides<'a> {
    pub candidate: Held<'a>,
    pub baseline: Held<'a>,
    /// The spares the last step started for the pairs of the rounds after the first, the candidate's
    /// then the baseline's, each side's in the order of its rounds.
    pub spares: [Vec<Spare>; 2],
    /// The spares started during the rounds that no round took, once the rounds are over.
    pub later_spares: Vec<Spare>,
}

/// A GPU of the step (none: the environment's) and the perf cases it measures (none: every case).
pub type Share = (Option<String>, Option<Vec<String>>);

/// The code of the attempt's two sides.
pub struct Codes {
    /// The current baseline's commit and tree.
    pub baseline: Code,
    /// The candidate's tree, and a commit made of it.
    pub candidate: Code,
}

impl Codes {
    /// The current baseline's code, and the candidate's `tree` (a tree object) with a commit of its own,
    /// for a worktree of it.
    pub fn of(repo: &Repo, history: &History, tree: &str) -> Result<Codes> {
        let baseline_commit = history.current_baseline_commit();
        let baseline_tree = repo.git(&["rev-parse", &format!("{baseline_commit}^{{tree}}")])?;
        let candidate_commit = repo.git(&[
            "commit-tree",
            tree,
            "-m",
            "git cutile-perf: the code a step measures",
        ])?;
        Ok(Codes {
            baseline: Code {
                commit: baseline_commit.to_string(),
                tree: baseline_tree.trim().to_string(),
            },
            candidate: Code {
                commit: candidate_commit.trim().to_string(),
                tree: tree.to_string(),
            },
        })
    }
}

/// Each GPU of the step and the perf cases it measures (none: every case): the environment's GPU alone
/// without `gpus`, one GPU with every case, or the baseline's perf cases [`paired::split`] among
/// several (on the first alone when the baseline's evidence lists none).
pub fn shares(
    repo: &Repo,
    history: &History,
    gpus: &[String],
    progress: &Progress,
) -> Result<Vec<Share>> {
    let [first, ..] = gpus else {
        return Ok(vec![(None, None)]);
    };
    if gpus.len() == 1 {
        return Ok(vec![(Some(first.clone()), None)]);
    }
    let cases = match Evidence::of(repo, &history.baseline_commit)? {
        Some(evidence) => evidence.perf_cases()?,
        None => Vec::new(),
    };
    if cases.is_empty() {
        progress.line(&format!(
            "the baseline's evidence lists no perf cases to share among GPUs {}: measuring on GPU {first} \
             alone",
            gpus.join(", ")
        ));
        return Ok(vec![(Some(first.clone()), None)]);
    }
    Ok(gpus
        .iter()
        .cloned()
        .zip(paired::split(&cases, gpus.len()))
        .map(|(gpu, share)| (Some(gpu), Some(share)))
        .collect())
}

/// Each GPU's runner template: `first` (whose GPU is the first share's) on the first, [`on_gpu`] of it
/// on each other.
pub fn templates<'a>(first: Pytest<'a>, shares: &[Share]) -> Vec<Pytest<'a>> {
    shares
        .iter()
        .enumerate()
        .map(|(index, (gpu, _))| match index {
            0 => first.clone(),
            _ => on_gpu(&first, gpu),
        })
        .collect()
}

/// `side` on another GPU than the first: its own sandbox, and no dumps (the first GPU's feed the checks).
fn on_gpu<'a>(side: &Pytest<'a>, gpu: &Option<String>) -> Pytest<'a> {
    Pytest {
        sandbox: side
            .sandbox
            .join(format!("gpu{}", gpu.as_deref().unwrap_or_default())),
        dumps: None,
        gpu: gpu.clone(),
        ..side.clone()
    }
}

/// Every side's code and worker on each template's GPU, before anything runs: their start-ups overlap
/// correctness and each other. A GPU's baseline worker is the one an earlier command kept there, where
/// it can serve. The candidate's worker gets its command first, since the step waits for its start-up;
/// the kept workers' trees are cleared of bytecode before it, so that what they hold after the rounds
/// was written during them.
pub fn hold<'r>(repo: &'r Repo, templates: &[Pytest], codes: &Codes) -> Result<Vec<HeldSides<'r>>> {
    let gpus: Vec<Option<String>> = (templates.iter())
        .map(|template| template.gpu.clone().or_else(WorkerEnv::visible_gpu))
        .collect();
    for gpu in &gpus {
        paired::clear_kept_bytecode(repo, gpu.as_deref())?;
    }
    let mut held = Vec::with_capacity(templates.len());
    for (template, gpu) in templates.iter().zip(gpus) {
        let env = WorkerEnv::now(
            &repo.root,
            template.python,
            template.test,
            template.filter,
            gpu,
        );
        let [candidate, baseline] = [
            ("candidate", &codes.candidate),
            ("baseline", &codes.baseline),
        ]
        .map(|(side, code)| {
            paired::hold(
                repo,
                Wanted {
                    side,
                    code: code.clone(),
                    env: env.clone(),
                    template,
                },
            )
        });
        let (candidate, baseline) = (candidate?, baseline?);
        held.push(HeldSides {
            spares: spares_for_later_rounds(repo, template, &env)?,
            later_spares: Vec::new(),
            baseline,
            candidate,
        });
    }
    Ok(held)
}

/// The spares for the pairs of the rounds that start with the step ([`Settings::rounds_ahead_of_correctness`])
/// on this machine, the candidate's then the baseline's, dealt a pair a round in the rounds' order: what
/// the last step started besides the candidate's first worker's.
fn spares_for_later_rounds(
    repo: &Repo,
    template: &Pytest,
    env: &WorkerEnv,
) -> Result<[Vec<Spare>; 2]> {
    let workers = template.place.workers();
    let mut dealt = [Vec::new(), Vec::new()];
    if workers != Workers::Lasting {
        return Ok(dealt);
    }
    let say = |line: String| template.progress.line(&line);
    for _ in 0..Settings::for_workers(workers).rounds_ahead_of_correctness() {
        for side in &mut dealt {
            match spare::take(repo, env, &say)? {
                Some(spare) => side.push(spare),
                None => return Ok(dealt),
            }
        }
    }
    Ok(dealt)
}

/// Ends the workers still kept once the step's are held: they are for GPUs this step does not measure
/// on (a session started without --gpus, say) and would hold GPU memory, idle, until their timeout.
pub fn end_other_workers(repo: &Repo, progress: &Progress) -> Result<()> {
    let unheld = paired::end_kept_workers(repo)?;
    if !unheld.is_empty() {
        let pids: Vec<String> = unheld.iter().map(u32::to_string).collect();
        progress.line(&format!(
            "ended the kept worker (pid {}): kept for other GPUs than this step's",
            pids.join(", ")
        ));
    }
    Ok(())
}

/// Each GPU's sides' trees, the candidate's then the baseline's, where their runs start (the trees
/// stay with `held`).
pub fn roots(held: &[HeldSides]) -> Vec<[PathBuf; 2]> {
    held.iter()
        .map(|sides| {
            [
                sides.candidate.tree.path.clone(),
                sides.baseline.tree.path.clone(),
            ]
        })
        .collect()
}

/// Each GPU's runners, the candidate's then the baseline's, from its template, each in its side's tree;
/// the baseline's in a sandbox of its own, dumping (where the template dumps) into its code's folder.
pub fn runners<'a>(
    repo: &Repo,
    roots: &'a [[PathBuf; 2]],
    templates: &[Pytest<'a>],
    baseline_code: &Code,
) -> Vec<[Pytest<'a>; 2]> {
    roots
        .iter()
        .zip(templates)
        .map(|([candidate_root, baseline_root], template)| {
            // a template with dumps (the first GPU's) holds the candidate's folder already
            let candidate = Pytest {
                root: candidate_root,
                ..template.clone()
            };
            let baseline = Pytest {
                root: baseline_root,
                sandbox: template.sandbox.join("baseline"),
                dumps: (template.dumps.as_ref()).map(|_| dumps_of(repo, &baseline_code.tree)),
                ..template.clone()
            };
            [candidate, baseline]
        })
        .collect()
}

/// Each GPU's spares topped up as the rounds begin ([`Settings::refill_spares`]), where its baseline
/// has a worker on this machine to import ahead like: none elsewhere.
pub fn pools(held: &[HeldSides]) -> Vec<Option<Pool>> {
    held.iter()
        .map(|sides| {
            let workers = sides.baseline.workers();
            let settings = Settings::for_workers(workers);
            match &sides.baseline.worker {
                Some(like) if workers == Workers::Lasting && settings.refill_spares => Some(
                    Pool::new(sides.baseline.env.clone(), like.channel(), Vec::new()),
                ),
                _ => None,
            }
        })
        .collect()
}

/// Each GPU's pair of sides for the rounds, with the workers `held` for them (the rounds give them back)
/// and the GPU's spares of `pools`.
pub fn pairs<'a>(
    shares: &[Share],
    runners: &'a [[Pytest<'a>; 2]],
    held: &mut [HeldSides],
    pools: &'a [Option<Pool>],
) -> Vec<Pair<'a>> {
    shares
        .iter()
        .zip(runners)
        .zip(held.iter_mut())
        .zip(pools)
        .map(
            |((((gpu, cases), [candidate, baseline]), sides), pool)| Pair {
                gpu: gpu.clone(),
                candidate: Side::new(candidate, sides.candidate.worker.take())
                    .with_spares(std::mem::take(&mut sides.spares[0]), pool.as_ref()),
                baseline: Side::new(baseline, sides.baseline.worker.take())
                    .with_spares(std::mem::take(&mut sides.spares[1]), pool.as_ref()),
                cases: cases.clone(),
            },
        )
        .collect()
}
