//! One benchmark run as the evidence keeps it: the records file pytest wrote, as it was read, and the GPU's state just
//! before and just after the run (clocks, temperature, other processes), with a warning when another
//! process held the GPU. The run's own process is not there at either moment, and the step's warm workers
//! (ours, idle while another measures) are left out, so every process listed is someone else's.

use anyhow::Result;

use crate::record::evidence::{GpuWatch, RunFile};
use crate::rules::records::Statistic;
use crate::system::gpu::GpuState;
use crate::system::pytest::BenchmarkRun;
use crate::system::workers::Side;

/// Runs `side`'s benchmark as run `name` (`label` on the terminal); `watch_gpu` reads the GPU around
/// it (a session without a GPU skips that), leaving out `side`'s own workers and the process groups
/// `ours` (the other workers). `cases` narrows a warm repetition to those test cases (a round on the
/// configs still open).
pub fn benchmark(
    side: &mut Side,
    statistic: Statistic,
    name: &str,
    label: &str,
    watch_gpu: bool,
    ours: &[u32],
    cases: Option<&[String]>,
) -> Result<(BenchmarkRun, Option<RunFile>)> {
    let runner = side.runner;
    let read_gpu = || watch_gpu.then(|| runner.place.gpu(runner.root)).flatten();
    let before = read_gpu();
    let measured = side.benchmark(statistic, label, cases)?;
    let after = read_gpu();
    // the side's worker says its pid once it runs (a worker started just now had not yet)
    let ours: Vec<u32> = ours.iter().copied().chain(side.worker_pids()).collect();
    let watch = watch_gpu.then(|| GpuWatch {
        before: before.map(|state| without(state, &ours)),
        after: after.map(|state| without(state, &ours)),
    });
    if let Some(others) = watch.as_ref().map(GpuWatch::others)
        && !others.is_empty()
    {
        runner.progress.line(&format!(
            "warning: other processes used the GPU around benchmark run {name} ({}): its timings may be off",
            crate::system::gpu::describe_processes(&others)
        ));
    }
    let file = measured.records.map(|records| RunFile {
        gpu: watch,
        ..RunFile::new(name, records)
    });
    Ok((measured.outcome, file))
}

/// `state` without the processes `ours` and those of their groups.
pub fn without(mut state: GpuState, ours: &[u32]) -> GpuState {
    state.processes.retain(|p| {
        let group = unsafe { libc::getpgid(p.pid as libc::pid_t) };
        !ours
            .iter()
            .any(|&g| g == p.pid || g as libc::pid_t == group)
    });
    state
}
