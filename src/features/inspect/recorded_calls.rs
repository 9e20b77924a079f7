//! Running the checkout's pytest for `start --scaffold` with the recorder plugin: once over the kernel's
//! correctness tests, recording the op's calls; once over the derived perf file, timing each growth.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use super::derived_inputs::{Call, parse_calls};
use super::perf_file::TimedOp;
use crate::rules::hint::hinted;
use crate::system::process;
use crate::system::pytest::{Bytecode, python_words, sources_first, write_plugin};
use crate::system::runner::{Local, Runner};

/// The plugin that records the op's calls and times the growths.
pub const CALLS_PLUGIN: (&str, &str) = ("cutile_perf_calls", include_str!("cutile_perf_calls.py"));

/// A correctness run or a growth run compiles and runs the kernel a few dozen times; one that takes
/// longer has hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The checkout's Python, and the directory of the recorder's plugin and files.
pub struct Recorder<'a> {
    pub python: &'a str,
    pub root: &'a Path,
    pub scratch: PathBuf,
}

/// How a run went: its output's last lines, for a refusal's message.
pub struct Ran {
    pub tail: String,
}

impl Recorder<'_> {
    fn pytest(&self, args: &[String]) -> Result<Ran> {
        std::fs::create_dir_all(&self.scratch)
            .with_context(|| format!("cannot create {}", self.scratch.display()))?;
        let words = python_words(self.python)?;
        let (program, python_args) = words.split_first().context("--python is empty")?;
        let mut full: Vec<String> = python_args.to_vec();
        full.extend(["-m", "pytest", "-q", "-p", "no:cacheprovider"].map(String::from));
        full.extend(write_plugin(&self.scratch, CALLS_PLUGIN)?);
        full.extend(args.iter().cloned());
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let inherited = match sources_first(self.root)? {
            Some(paths) => Some(paths),
            None => std::env::var_os("PYTHONPATH"),
        };
        let mut paths = vec![self.scratch.clone()];
        paths.extend(inherited.iter().flat_map(std::env::split_paths));
        let path = std::env::join_paths(paths)?;
        let mut command = Local
            .command(program, &full, self.root)
            .env("PYTHONPATH", path);
        // no bytecode written into the checkout, none planted there read: as every test process of a session
        for (name, value) in Bytecode::for_tree(self.root)?.env() {
            command = command.env(name, value);
        }
        let output = process::capture(command, RUN_TIMEOUT)
            .with_context(|| format!("cannot run {}", self.python))?;
        // tests cut short by Ctrl-C made fewer calls than they would have: none of it is a result
        if process::interrupted() {
            return Err(process::Interrupted("no session perf file was written").into());
        }
        let text = String::from_utf8_lossy(&output.stdout).to_string()
            + &String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = text.lines().collect();
        Ok(Ran {
            tail: lines[lines.len().saturating_sub(15)..].join("\n"),
        })
    }

    /// The calls of `op` that the correctness tests of `test` make.
    pub fn record(&self, test: &str, op: &TimedOp) -> Result<(Vec<Call>, Ran)> {
        let file = self.scratch.join("calls.jsonl");
        let _ = std::fs::remove_file(&file);
        let ran = self.pytest(&[
            format!("--cutile-perf-calls-of={}:{}", op.module, op.function),
            format!("--cutile-perf-calls-to={}", file.display()),
            "-k".to_string(),
            crate::system::pytest::CORRECTNESS_SELECTION.to_string(),
            test.to_string(),
        ])?;
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let calls = parse_calls(&text).map_err(|err| {
            hinted(
                format!(
                    "the recorded calls of {} cannot be read: {err}",
                    op.function
                ),
                format!("see {}", file.display()),
            )
        })?;
        Ok((calls, ran))
    }

    /// Each growth of the perf file `file` that ran, with its forward time (ms), in growing order; the
    /// growths past four times the first one at or over `threshold_ms` are not run.
    pub fn time_growths(&self, file: &str, threshold_ms: f64) -> Result<(Vec<(u64, f64)>, Ran)> {
        let times = self.scratch.join("growth.txt");
        let _ = std::fs::remove_file(&times);
        let ran = self.pytest(&[
            format!("--cutile-perf-growth-to={}", times.display()),
            format!("--cutile-perf-growth-ms={threshold_ms}"),
            "-k".to_string(),
            crate::system::pytest::BENCHMARK_SELECTION.to_string(),
            file.to_string(),
        ])?;
        let text = std::fs::read_to_string(&times).unwrap_or_default();
        let timed = text
            .lines()
            .filter_map(|line| {
                let (growth, ms) = line.split_once(' ')?;
                Some((growth.parse().ok()?, ms.parse().ok()?))
            })
            .collect();
        Ok((timed, ran))
    }
}

/// The growths of the perf file: the first whose time reached `threshold_ms`, and four times it where
/// that ran too; where none reached it, the largest that ran. None when none ran.
pub fn chosen_growths(timed: &[(u64, f64)], threshold_ms: f64) -> Option<Vec<u64>> {
    let Some(&(first, _)) = timed.iter().find(|(_, ms)| *ms >= threshold_ms) else {
        return timed
            .iter()
            .map(|&(growth, _)| growth)
            .max()
            .map(|g| vec![g]);
    };
    let mut chosen = vec![first];
    chosen.extend(timed.iter().map(|&(g, _)| g).find(|&g| g == 4 * first));
    Some(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_growth_past_the_launch_and_four_times_it_are_chosen() {
        let timed = [(1, 0.004), (2, 0.008), (4, 0.016), (8, 0.032), (16, 0.064)];
        assert_eq!(chosen_growths(&timed, 0.010), Some(vec![4, 16]));
        assert_eq!(chosen_growths(&timed[..3], 0.010), Some(vec![4]));
        assert_eq!(chosen_growths(&timed[..2], 0.010), Some(vec![2]));
        assert_eq!(chosen_growths(&[], 0.010), None);
    }
}
