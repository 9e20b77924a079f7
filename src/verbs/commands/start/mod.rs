//! `start`: the session branch and iteration 0, the baseline.

mod baseline;
mod measure;
mod plan;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::features::diagnose::case::Place;
use crate::features::diagnose::facts::{Already, Dumped};
use crate::features::inspect::Report;
use crate::record::evidence::Evidence;
use crate::record::history::{History, write_table};
use crate::record::journal::{self, Journal, Lock, Made, Phase, Verb};
use crate::record::session::{Iteration, Session, fmt_ms};
use crate::rules::compile::CompileFacts;
use crate::rules::decision::{self, Thresholds};
use crate::rules::kernel_class::KernelClass;
use crate::rules::noise::{TICK_SHARE, TIMER_TICK_MS, in_whole_ticks};
use crate::rules::records::{LAUNCH_BOUND_MS, Measurement, Statistic};
use crate::rules::stats::Spread;
use crate::rules::trailers::{Block, render_message};
use crate::rules::units::counted;
use crate::system::git::{Repo, SharedFilesLock};
use crate::system::gpu::GpuState;
use crate::system::runner::RunnerSettings;
use crate::system::ui::{Render, Ui};
use crate::verbs::agent::next_action::{NextAction, Situation, next_action};
use crate::{features::hook, features::recovery, system::process};
use baseline::{Baseline, baseline};
use plan::{Plan, plan};

/// What `start` did, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct StartReport {
    pub branch: String,
    pub commit: String,
    pub session: Session,
    pub iteration: u32,
    pub latency_ms: f64,
    pub configs: Vec<Measurement>,
    pub table: PathBuf,
    /// What the correctness run found, in words.
    #[serde(skip)]
    tests: String,
    /// Configs too noisy for the thresholds.
    pub noisy: Vec<Spread>,
    /// Configs (test and pass) so fast that a timer tick is 1% of their median or min or more: the mean
    /// would decide them in fewer rounds.
    pub ticked: Vec<String>,
    /// Configs whose baseline is launch-bound (under [`LAUNCH_BOUND_MS`]): they time the launch, not
    /// the kernel, and want larger shapes.
    pub launch_bound: Vec<String>,
    /// The plan `inspect` read from the source (kernels, launches, registrations, tuning), if it could.
    pub plan: Option<Report>,
    /// The GPU the baseline ran on, with its clocks, memory and other processes.
    pub gpu: Option<GpuState>,
    /// Seconds `start` spent measuring the class under Nsight Compute (`session.class_source` says
    /// what it found); none when it did not run ncu (`--class`, `--intensity`, no ncu or no GPU).
    pub class_measure_s: Option<f64>,
    /// Seconds the baseline's compile facts took (none when they were not gathered).
    pub compile_facts_s: Option<f64>,
    /// What the loop expects now, with one sentence for an agent.
    pub next_action: NextAction,
}

/// What a session is started with: the kernel, where it is found and tested, what may change, how it
/// runs and by which rules it is decided.
#[derive(Debug)]
pub struct StartOptions {
    pub kernel: String,
    /// The suite the kernel is in, when its name is in several.
    pub suite: Option<String>,
    /// The kernel's test file, when none is found or to pick another.
    pub test: Option<String>,
    /// Paths iterations may change besides those `inspect` finds.
    pub allow: Vec<String>,
    /// Paths `inspect` found that iterations may not change.
    pub deny: Vec<String>,
    /// The Python command that runs pytest; default: the one found on PATH.
    pub python: Option<String>,
    /// A pytest -k expression narrowing the selections.
    pub filter: Option<String>,
    pub stat: Statistic,
    pub class: Option<KernelClass>,
    /// The kernel's arithmetic intensity, which classifies it.
    pub intensity: Option<f64>,
    pub runner: RunnerSettings,
    /// Start without a GPU.
    pub no_gpu: bool,
    /// `--gpus`: the session's GPUs, the baseline measured on the first; none: the environment's.
    pub gpus: Option<String>,
    /// Time limit for the baseline run.
    pub budget: Duration,
    pub thresholds: Thresholds,
}

/// A session as a pipeline: plan (checks, nothing created), baseline (branch, hook, runs), commit.
pub fn run(ui: &mut Ui, repo: &Repo, args: &StartOptions) -> Result<StartReport> {
    let _lock = Lock::take(repo, "start")?;
    clean_up_interrupted_start(ui, repo)?;
    process::record_groups_in(journal::group_file(repo)?);
    let plan = plan(repo, args, ui.sink())?;
    let original = match repo.branch()? {
        Some(name) => name,
        None => repo.head()?,
    };
    let mut journal = Journal {
        verb: Verb::Start,
        pid: std::process::id(),
        phase: Phase::CreatingBranch,
        branch: plan.branch.clone(),
        base: repo.head()?,
        original: Some(original.clone()),
        edit_tree: None,
        index: None,
        work_tree: None,
        note: None,
        made: Vec::new(),
        writer: crate::system::process_identity::ProcessIdentity::current(),
    };
    journal.save(repo)?;
    let result = (|| {
        repo.git(&["checkout", "-q", "-b", &plan.branch])?;
        make_beside_the_branch(ui, repo, &mut journal)?;
        crate::record::history::made_sandbox(repo)?;
        let ignored = crate::features::ignored::record(repo, &plan.branch)?;
        journal.enter(repo, Phase::RunningTests)?;
        let baseline = baseline(repo, &plan, &original)?;
        let mut plan = plan;
        plan.session.ignored = Some(ignored);
        let mut class_measure_s = None;
        if plan.measure_class {
            let began = Instant::now();
            let measured = measure::measured_class(
                repo,
                &Place {
                    runner: &*plan.place,
                    gpu: plan.gpu_state.as_ref(),
                    progress: &plan.progress,
                },
                &plan.session,
                &baseline.iteration.configs,
                plan.deadline,
            );
            let seconds = began.elapsed().as_secs_f64();
            class_measure_s = Some(seconds);
            if let Some((class, source)) = measured {
                ui.progress(&format!(
                    "the class measured under ncu in {seconds:.0} s: {class}-bound"
                ));
                plan.session.class = Some(class);
                plan.session.class_source = Some(source);
            }
        }
        let report = commit(repo, &mut journal, plan, baseline)?;
        Ok(StartReport {
            class_measure_s,
            ..report
        })
    })();
    recovery::settle(repo, &journal, result)
}

/// The scratch directory's exclude line and the hooks, each noted in the journal where `start` made it,
/// so that undoing `start` leaves the repository as it found it.
fn make_beside_the_branch(ui: &mut Ui, repo: &Repo, journal: &mut Journal) -> Result<()> {
    if !crate::record::history::sandbox(repo).exists() {
        journal.made.push(Made::Sandbox);
    }
    if repo.exclude(&format!("/{}/", crate::rules::guard::SANDBOX))? {
        journal.made.push(Made::ExcludeLine);
    }
    journal.save(repo)?;
    let shared = SharedFilesLock::take(repo)?;
    let change = hook::install(repo, &shared)?;
    if matches!(change, hook::Change::Installed { .. }) {
        journal.made.push(Made::Hooks);
        journal.save(repo)?;
    }
    ui.progress(&hook::describe(change));
    Ok(())
}

/// Commits the baseline with the session, remembers it for the hook, and writes the table.
fn commit(
    repo: &Repo,
    journal: &mut Journal,
    mut plan: Plan,
    baseline: Baseline,
) -> Result<StartReport> {
    let Baseline {
        iteration: baseline,
        tests,
        spread,
        junit,
        dumps,
        held,
    } = baseline;
    let noisy = noisy_configs(&spread, &plan.session.thresholds);
    plan.session.spread = spread;
    let latency = baseline.latency_ms.expect("the baseline was measured");
    let evidence = Evidence::new(&plan.session, 0, plan.gpu_state.clone(), junit);
    let commit = commit_with_note(repo, journal, &plan, &baseline, &evidence)?;
    let (compile, compile_facts_s) =
        compile_facts(repo, &plan, &baseline, &commit, &evidence, &dumps);
    // the node did the baseline's last GPU work: give it back
    plan.place.release();
    if compile.is_some() {
        evidence.with_compile(compile).attach(repo, &commit)?;
    }
    let configs = baseline.configs.clone();
    let history = History {
        session: plan.session.clone(),
        baseline_commit: commit.clone(),
        iterations: vec![(commit.clone(), baseline)],
        skipped: Vec::new(),
        foreign: Default::default(),
        estimates: Default::default(),
        edited: Vec::new(),
    };
    let table = write_table(repo, &history)?;
    held.keep_as_baseline(repo, &commit, plan.deadline, &plan.progress);
    let next_action = next_action(Situation::Session(&history));
    Ok(StartReport {
        branch: plan.branch,
        commit,
        iteration: 0,
        latency_ms: latency,
        ticked: ticked_configs(&configs, plan.session.statistic),
        launch_bound: launch_bound_configs(&configs),
        session: plan.session,
        configs,
        table,
        tests,
        noisy,
        plan: plan.inspection,
        gpu: plan.gpu_state,
        class_measure_s: None,
        compile_facts_s,
        next_action,
    })
}

/// Commits iteration 0 with the session's trailers and attaches its evidence note, the note kept in the
/// journal first: a kill between the commit and its note leaves it to `repair`.
fn commit_with_note(
    repo: &Repo,
    journal: &mut Journal,
    plan: &Plan,
    baseline: &Iteration,
    evidence: &Evidence,
) -> Result<String> {
    let mut block = Block::default();
    baseline.write(&mut block);
    plan.session.write(&mut block);
    let subject = format!(
        "cutile-perf: baseline {} {} ms",
        plan.kernel_name,
        fmt_ms(baseline.latency_ms)
    );
    journal.note = Some(evidence.stash(repo)?);
    journal.enter(repo, Phase::CommittingBaseline)?;
    let commit = hook::message::commit(repo, &render_message(&subject, None, &block), true)?;
    evidence.attach(repo, &commit)?;
    journal.enter(repo, Phase::WritingTable)?;
    // a session branch renamed to start afresh keeps its own baseline ref, not this one's
    repo.follow_renamed_sessions(crate::record::session::BRANCH_PREFIX)?;
    repo.remember_baseline(&plan.branch, &commit)?;
    crate::features::refusals::keep_perf_file(repo, &plan.session)?;
    Ok(commit)
}

/// The baseline's compile facts, so that `compare 0 N` reads both sides from evidence: from what its
/// runs dumped while they compiled anyway; and the seconds they took, where there were any.
fn compile_facts(
    repo: &Repo,
    plan: &Plan,
    baseline: &Iteration,
    commit: &str,
    evidence: &Evidence,
    dumps: &Path,
) -> (Option<CompileFacts>, Option<f64>) {
    let place = Place {
        runner: &*plan.place,
        gpu: plan.gpu_state.as_ref(),
        progress: &plan.progress,
    };
    let began = Instant::now();
    let compile = crate::features::diagnose::facts::for_iteration(
        repo,
        place,
        &plan.session,
        &baseline.configs,
        commit,
        Already {
            dumped: Some(Dumped {
                dir: dumps,
                runs: evidence.runs.iter().collect(),
            }),
            ..Already::default()
        },
        plan.deadline,
    );
    let seconds = compile.is_some().then(|| began.elapsed().as_secs_f64());
    (compile, seconds)
}

/// Configs whose run-to-run spread at the baseline is more than half the regression limit: the
/// thresholds cannot tell a change from noise there without many paired rounds.
fn noisy_configs(spread: &[Spread], limits: &Thresholds) -> Vec<Spread> {
    spread
        .iter()
        .filter(|s| s.spread_pct > limits.regression_pct / 2.0)
        .cloned()
        .collect()
}

/// The configs whose baseline is launch-bound, with their time.
fn launch_bound_configs(configs: &[Measurement]) -> Vec<String> {
    configs
        .iter()
        .filter(|c| c.value < LAUNCH_BOUND_MS)
        .map(|c| format!("{} {} ({} ms)", c.test, c.pass, fmt_ms(Some(c.value))))
        .collect()
}

/// Configs whose `statistic` moves in whole ticks of the GPU timer of [`TICK_SHARE`] of it or more,
/// which the paired verdicts judge on the records' means (`verdict::Rules::Ticked`): in the verdicts'
/// bench, on rope's grid under the H200's order effect, 98.60% of 3% regressions of one config were
/// caught on medians alone and 99.65% so.
fn ticked_configs(configs: &[Measurement], statistic: Statistic) -> Vec<String> {
    if statistic == Statistic::Mean {
        return Vec::new();
    }
    configs
        .iter()
        .filter(|c| in_whole_ticks(c.value))
        .map(|c| format!("{} {}", c.test, c.pass))
        .collect()
}

impl Render for StartReport {
    /// The session, its baseline, the configs the loop will find hard to judge, and what comes next.
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let [session, baseline, noise, launch_bound] =
            ["session", "baseline", "noise", "launch-bound"].map(|word| ui.bold(word).to_string());
        let out = ui.out();
        self.write_session(out, &session)?;
        self.write_baseline(out, &baseline)?;
        self.write_noisy(out, &noise)?;
        self.write_ticked(out, &noise)?;
        self.write_launch_bound(out, &launch_bound)?;
        writeln!(out, "next: {}", self.next_action.line)?;
        Ok(())
    }
}

impl StartReport {
    /// The branch and what the session covers: kernel, test, allowed paths, GPU, runner and class.
    fn write_session(&self, out: &mut dyn Write, word: &str) -> io::Result<()> {
        let session = &self.session;
        writeln!(out, "{word} {}", self.branch)?;
        writeln!(out, "  kernel     {}", session.kernel)?;
        writeln!(out, "  test       {}", session.test)?;
        writeln!(out, "  allowed    {}", session.allowed.join(", "))?;
        writeln!(
            out,
            "  gpu        {}",
            session.gpu.as_deref().unwrap_or("none found")
        )?;
        writeln!(out, "  runner     {}", session.runner.describe())?;
        if let (Some(class), Some(source)) = (session.class, &session.class_source) {
            writeln!(out, "  class      {class} ({source})")?;
        }
        if let Some(seconds) = self.class_measure_s {
            writeln!(out, "  ncu        {seconds:.0} s measuring the class")?;
        }
        Ok(())
    }

    /// Iteration 0's latency, what it is the mean of, and what the correctness run found.
    fn write_baseline(&self, out: &mut dyn Write, word: &str) -> io::Result<()> {
        writeln!(
            out,
            "{word} iteration 0: {} ms (geometric mean of {} configs' {}s, {})",
            fmt_ms(Some(self.latency_ms)),
            self.configs.len(),
            self.session.statistic,
            self.tests
        )
    }

    /// The configs too noisy for the regression limit, with their spread, and what helps.
    fn write_noisy(&self, out: &mut dyn Write, word: &str) -> io::Result<()> {
        if self.noisy.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "{word} {} configs moved more than half the {}% limit between the baseline's runs:",
            self.noisy.len(),
            decision::fmt_pct(self.session.thresholds.regression_pct)
        )?;
        for s in &self.noisy {
            writeln!(out, "  {:.2}%  {} {}", s.spread_pct, s.test, s.pass)?;
        }
        writeln!(
            out,
            "  each step will need more paired rounds for them; a larger nrep in their test, or a \
             --filter without them, makes the loop faster and surer"
        )
    }

    /// The configs that move in whole timer ticks, judged on the records' means.
    fn write_ticked(&self, out: &mut dyn Write, word: &str) -> io::Result<()> {
        if self.ticked.is_empty() {
            return Ok(());
        }
        let configs = match self.ticked.len() {
            1 => "1 config runs".to_string(),
            n => format!("{n} configs run"),
        };
        let statistic = self.session.statistic;
        writeln!(
            out,
            "{word} {configs} under {:.1} us, where a {statistic} moves in whole {:.0} ns timer ticks: \
             each step judges their change on the records' means, which no tick rounds, where the \
             records hold one; the table stays in {statistic}s",
            TIMER_TICK_MS / TICK_SHARE * 1e3,
            TIMER_TICK_MS * 1e6,
        )?;
        write_configs(out, &self.ticked)
    }

    /// The launch-bound configs, which want larger shapes.
    fn write_launch_bound(&self, out: &mut dyn Write, word: &str) -> io::Result<()> {
        if self.launch_bound.is_empty() {
            return Ok(());
        }
        writeln!(
            out,
            "{word} {} {} in under {:.0} us, a few empty launches: they time the launch, not \
             the kernel; grow their shapes to sizes of real use (in a scaffolded session perf file, its GROWTH) \
             and start again",
            counted(self.launch_bound.len() as u64, "config"),
            if self.launch_bound.len() == 1 {
                "runs"
            } else {
                "run"
            },
            LAUNCH_BOUND_MS * 1e3
        )?;
        write_configs(out, &self.launch_bound)
    }
}

/// One indented line per config.
fn write_configs(out: &mut dyn Write, configs: &[String]) -> io::Result<()> {
    for config in configs {
        writeln!(out, "  {config}")?;
    }
    Ok(())
}

/// A journal left by a killed `start` is this verb's own half-made branch: it is finished or undone
/// before starting afresh; one left by `step` needs `repair`.
fn clean_up_interrupted_start(ui: &mut Ui, repo: &Repo) -> Result<()> {
    if let Some(line) = recovery::end_orphaned_tests(repo)? {
        ui.progress(&line);
    }
    match Journal::load(repo)? {
        Some(journal) if journal.verb == Verb::Start => {
            let repaired = recovery::repair(repo, &journal)?;
            ui.progress(&format!("{}: {}", journal.describe(), repaired.what));
            Ok(())
        }
        _ => recovery::refuse_unfinished(repo, ui.sink()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::ui::Progress;
    use crate::verbs::agent::next_action::Expect;

    /// A report with every optional section present: its session, class, ncu time, noise, ticks and
    /// launch-bound configs.
    fn report() -> StartReport {
        let config = |test: &str, value: f64| Measurement {
            pass: "forward".into(),
            test: test.into(),
            value,
            mean: None,
        };
        let mut session = crate::record::session::tests::session();
        session.gpu = Some("NVIDIA H200".into());
        session.allowed = vec![
            session.kernel.clone(),
            "src/tilegym/ops/cutile/common.py".into(),
        ];
        session.class_source = Some("static: tile loads, no MMA".into());
        StartReport {
            branch: "cutile-perf/rms_norm-20261204".into(),
            commit: "0123456789".into(),
            session,
            iteration: 0,
            latency_ms: 0.125,
            configs: vec![config("t::p[small]", 0.004), config("t::p[large]", 0.5)],
            table: PathBuf::from("table.md"),
            tests: "2 passed".into(),
            noisy: vec![Spread {
                pass: "forward".into(),
                test: "t::p[large]".into(),
                spread_pct: 3.25,
            }],
            ticked: vec!["t::p[small] forward".into()],
            launch_bound: vec!["t::p[small] forward (0.004 ms)".into()],
            plan: None,
            gpu: None,
            class_measure_s: Some(12.4),
            compile_facts_s: None,
            next_action: NextAction {
                expect: Expect::EditAndStep,
                letters: Vec::new(),
                variants: Vec::new(),
                sentence: "Edit the kernel, then step.".into(),
                line: "edit the kernel, then step".into(),
            },
        }
    }

    #[test]
    fn the_report_reads_section_by_section() {
        let mut out = Vec::new();
        let mut ui = Ui::plain(&mut out, Progress::to(std::io::sink()), false);
        report().render(&mut ui).unwrap();
        let text = String::from_utf8(out).unwrap();
        let expected = [
            "session cutile-perf/rms_norm-20261204",
            "  kernel     src/tilegym/ops/cutile/rms_norm.py",
            "  test       tests/ops/test_rms_norm.py",
            "  allowed    src/tilegym/ops/cutile/rms_norm.py, src/tilegym/ops/cutile/common.py",
            "  gpu        NVIDIA H200",
            "  runner     local",
            "  class      memory (static: tile loads, no MMA)",
            "  ncu        12 s measuring the class",
            "baseline iteration 0: 0.125000 ms (geometric mean of 2 configs' medians, 2 passed)",
            "noise 1 configs moved more than half the 2% limit between the baseline's runs:",
            "  3.25%  t::p[large] forward",
            "  each step will need more paired rounds for them; a larger nrep in their test, or a --filter without them, makes the loop faster and surer",
            "noise 1 config runs under 3.2 us, where a median moves in whole 32 ns timer ticks: each step judges their change on the records' means, which no tick rounds, where the records hold one; the table stays in medians",
            "  t::p[small] forward",
            "launch-bound 1 config runs in under 10 us, a few empty launches: they time the launch, not the kernel; grow their shapes to sizes of real use (in a scaffolded session perf file, its GROWTH) and start again",
            "  t::p[small] forward (0.004 ms)",
            "next: edit the kernel, then step",
        ];
        assert_eq!(text, expected.map(|line| format!("{line}\n")).concat());
    }
}
