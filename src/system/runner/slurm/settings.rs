//! What each iteration's allocation asks for: the user's `sbatch` options and queue timeout, as they
//! are given on the command line and kept in the baseline's trailers. Apart from the allocation because
//! a session's record reads and writes them without Slurm at hand.

use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::DEFAULT_QUEUE_TIMEOUT;
use crate::rules::hint::Hinted;
use crate::rules::trailers::Block;
use crate::rules::units;

/// What each iteration's allocation asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SlurmSettings {
    /// Extra `sbatch` options, e.g. `-p gpu --gres=gpu:1 -t 15`.
    #[serde(rename = "slurm_args")]
    pub args: String,
    /// How long an iteration may wait in the queue for its node.
    #[serde(serialize_with = "serialize_wait")]
    pub queue_timeout: Option<Duration>,
}

fn serialize_wait<S: serde::Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(wait) => s.serialize_some(&fmt_wait(*wait)),
        None => s.serialize_none(),
    }
}

impl SlurmSettings {
    /// The baseline trailers of a Slurm session (after its `Runner: slurm`).
    pub fn write(&self, block: &mut Block) {
        if !self.args.is_empty() {
            block.push("Slurm-Args", &self.args);
        }
        if let Some(wait) = self.queue_timeout {
            block.push("Queue-Timeout", fmt_wait(wait));
        }
    }

    pub fn read(block: &Block) -> Result<SlurmSettings> {
        Ok(SlurmSettings {
            args: block.get("Slurm-Args")?.unwrap_or("").to_string(),
            queue_timeout: block
                .get("Queue-Timeout")?
                .map(|text| units::parse_duration(text).map_err(anyhow::Error::msg))
                .transpose()?,
        })
    }

    /// ` -p gpu (queue timeout 30m0s)`, after the runner's name in status lines.
    pub fn describe(&self) -> String {
        let mut text = String::new();
        if !self.args.is_empty() {
            text.push_str(&format!(" {}", self.args));
        }
        let wait = self.queue_timeout.unwrap_or(DEFAULT_QUEUE_TIMEOUT);
        text.push_str(&format!(" (queue timeout {})", fmt_wait(wait)));
        text
    }
}

/// `2m10s`, `45s`, `1h0m5s`: a wait as people read it (and as `parse_duration` reads it back).
pub fn fmt_wait(wait: Duration) -> String {
    let seconds = wait.as_secs();
    match (seconds / 3600, seconds / 60 % 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

/// `--slurm-args` split into words as a shell would, so a quoted value (`--comment "perf run"`) stays one.
pub fn split_args(slurm_args: &str) -> Result<Vec<String>> {
    shlex::split(slurm_args).with_context(|| {
        Hinted::new(
            format!("--slurm-args {slurm_args:?} has an unclosed quote or a trailing backslash"),
            "quote it as you would on a shell command line",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_args_split_as_a_shell_would() {
        assert_eq!(
            split_args("-p gpu --comment 'perf run' -t 15").unwrap(),
            ["-p", "gpu", "--comment", "perf run", "-t", "15"]
        );
        assert!(split_args("").unwrap().is_empty());
        let err = split_args("--comment 'perf").unwrap_err();
        assert!(err.to_string().contains("unclosed quote"), "{err}");
        assert_eq!(
            crate::rules::hint::of(&err),
            Some("quote it as you would on a shell command line")
        );
    }

    #[test]
    fn waits_read_back_as_durations() {
        assert_eq!(fmt_wait(Duration::from_secs(130)), "2m10s");
        assert_eq!(fmt_wait(Duration::from_secs(45)), "45s");
        assert_eq!(fmt_wait(Duration::from_secs(3605)), "1h0m5s");
        assert_eq!(
            crate::rules::units::parse_duration(&fmt_wait(Duration::from_secs(3605))),
            Ok(Duration::from_secs(3605))
        );
    }
}
