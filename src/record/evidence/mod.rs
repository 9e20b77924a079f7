//! The evidence behind each verdict, kept in a git note on the iteration commit (`refs/notes/cutile-perf`).
//!
//! `sandbox/` is scratch: the next step overwrites its JUnit files. The note keeps them, with the tool's
//! version, the GPU and the thresholds, so that `verify` can recompute every trailer from the raw runs and
//! a clone can carry them (`git push origin refs/notes/cutile-perf`). A note is a readable summary (what
//! `git log --notes=cutile-perf` shows) followed by the payload: the whole evidence as JSON, gzipped and
//! base64-encoded in lines of 76 characters, so that 10,000 configs stay a few hundred kilobytes.

//!
//! The evidence and what is read from it are here; one run's records file in `run.rs`, the commit a note
//! is bound to in `binding.rs`, and the note itself (its text, where git keeps it) in `notes.rs`.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::record::session::Session;
use crate::rules::compile::CompileFacts;
use crate::rules::decision::Thresholds;
use crate::rules::records::CaseOutcome;
use crate::rules::verdict::Rules;
use crate::system::gpu::GpuState;

mod binding;
mod notes;
mod run;

pub use binding::Binding;
pub use notes::{NOTES_REF, note, noted_commits};
pub use run::{GpuWatch, RunFile};

/// Everything an iteration's verdict was made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub tool_version: String,
    pub iteration: u32,
    /// `name, compute capability, driver` when a GPU was seen.
    pub gpu: Option<String>,
    /// The GPU's clocks, memory and other processes when the iteration began (none in older notes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_state: Option<GpuState>,
    pub statistic: String,
    pub thresholds: Thresholds,
    /// In the order they ran.
    pub runs: Vec<RunFile>,
    /// What the compiler made of the iteration's kernels; none without a GPU, without the budget for
    /// it, or in a note written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileFacts>,
    /// The commit the note was written for, as it was then (none in notes written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<Binding>,
    /// How the step's measurement ended where its runs' files cannot say, and by which revision of the
    /// rounds' rules (none in older notes: the first).
    #[serde(
        default = "Ended::of_older_note",
        skip_serializing_if = "Ended::is_empty"
    )]
    pub ended: Ended,
}

/// What a step's live measurement knew that its runs' files do not hold, kept beside them so that the
/// replay of the evidence (`replay::attempt`) is the attempt `step` recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ended {
    /// A run that died, timed out or gave no usable record (its file may be missing): why, as its
    /// process ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<Crash>,
    /// Each set of rounds (`round`, `confirm-round`) that was decided on its means because no further
    /// round fitted: why (the budget left, a round's length).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undecided: Vec<Undecided>,
    /// The revision of the rounds' rules that decided them; a note written before it was kept was
    /// decided by the first.
    #[serde(default = "first_rules")]
    pub rules: Rules,
}

fn first_rules() -> Rules {
    Rules::First
}

impl Ended {
    /// What a note written before `Ended` was kept says: nothing, under the first rules.
    fn of_older_note() -> Ended {
        Ended {
            rules: Rules::First,
            ..Ended::default()
        }
    }

    /// Whether it says no more than an older note without it.
    pub fn is_empty(&self) -> bool {
        *self == Ended::of_older_note()
    }

    /// Why the rounds named `prefix` were decided on their means, where the step said so.
    pub fn undecided(&self, prefix: &str) -> Option<&str> {
        self.undecided
            .iter()
            .find(|undecided| undecided.rounds == prefix)
            .map(|undecided| undecided.why.as_str())
    }
}

/// A crash of a step, in the stage it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Crash {
    pub stage: Stage,
    pub why: String,
}

/// The stage of a step a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Correctness,
    Rounds,
}

/// A set of rounds decided on its means, and why no further round was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Undecided {
    pub rounds: String,
    pub why: String,
}

impl Evidence {
    /// The evidence of iteration `iteration` of `session`: its runs' JUnit files, with this tool's
    /// version and the GPU's state as the iteration began.
    pub fn new(
        session: &Session,
        iteration: u32,
        gpu_state: Option<GpuState>,
        runs: Vec<RunFile>,
    ) -> Evidence {
        Evidence {
            tool_version: crate::VERSION.to_string(),
            iteration,
            gpu: gpu_state.as_ref().map(|s| s.gpu.identity()),
            gpu_state,
            statistic: session.statistic.to_string(),
            thresholds: session.thresholds,
            runs: runs.into_iter().map(RunFile::bounded).collect(),
            compile: None,
            binding: None,
            ended: Ended::default(),
        }
    }

    /// The same evidence with how the step's measurement ended.
    pub fn with_ended(self, ended: Ended) -> Evidence {
        Evidence { ended, ..self }
    }

    /// The same evidence with the iteration's compile facts (`diagnose::facts::for_iteration`).
    pub fn with_compile(self, compile: Option<CompileFacts>) -> Evidence {
        Evidence { compile, ..self }
    }

    pub fn run(&self, name: &str) -> Option<&RunFile> {
        self.runs.iter().find(|r| r.name == name)
    }

    /// The perf cases the benchmark runs measured (JUnit ids, sorted, each once): what a step's GPUs share.
    pub fn perf_cases(&self) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for run in self
            .runs
            .iter()
            .filter(|run| run.name.starts_with("benchmark") || run.name.contains("round-"))
        {
            ids.extend(run.cases()?.into_iter().map(|case| case.id));
        }
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The GPU that measured each perf case of the rounds (`RunFile::cuda_device`; `-` where none is
    /// named: one GPU, as in older notes). `Err` names a case measured on two GPUs: its rounds would pair
    /// a side on one GPU with the other side on another.
    pub fn gpu_of_cases(&self) -> Result<BTreeMap<String, String>, String> {
        let mut gpu_of: BTreeMap<String, String> = BTreeMap::new();
        for run in self.runs.iter().filter(|run| run.name.contains("round-")) {
            let gpu = run.cuda_device.as_deref().unwrap_or("-");
            for case in run.cases().map_err(|e| format!("{e:#}"))? {
                let first = gpu_of.entry(case.id).or_insert_with(|| gpu.to_string());
                if first != gpu {
                    return Err(format!(
                        "the run {} measured a case on GPU {gpu} that other runs measured on GPU {first}",
                        run.name
                    ));
                }
            }
        }
        Ok(gpu_of)
    }

    /// The ids of the correctness cases that passed (what a later step may not skip).
    pub fn passed_cases(&self) -> Result<Vec<String>> {
        let Some(run) = self.run("correctness") else {
            return Ok(Vec::new());
        };
        Ok(run
            .cases()?
            .into_iter()
            .filter(|c| c.outcome == CaseOutcome::Passed)
            .map(|c| c.id)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::records::{RecordFile, RecordFormat};

    /// A benchmark JUnit file of `n` configs as TileGym writes it.
    pub(super) fn benchmark_junit(n: usize) -> String {
        let mut xml = String::from(
            r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">"#,
        );
        for i in 0..n {
            xml.push_str(&format!(
                r#"<testcase classname="tests.ops.test_rms_norm.Test_RMSNorm" name="test_perf[cutile-static_persistent-{i}-1024-torch.float16]" time="0.5"><properties><property name="benchmark" value="{{'cutile': {{'forward': {{'median': {:.6}, 'mean': 0.3, 'min': 0.2}}}}}}"/></properties><system-out>Cutile: ... ms</system-out></testcase>"#,
                0.2 + i as f64 * 1e-5
            ));
        }
        xml.push_str("</testsuite></testsuites>");
        xml
    }

    /// A JUnit records file holding `text`.
    pub(super) fn junit(text: String) -> RecordFile {
        RecordFile {
            format: RecordFormat::Junit,
            text,
        }
    }

    /// An H200's state, with `processes` (as `nvidia-smi` lists them) on it.
    pub(super) fn h200(processes: &str) -> GpuState {
        GpuState {
            gpu: crate::system::gpu::Gpu::parse(
                "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41",
            )
            .unwrap(),
            processes: crate::system::gpu::parse_processes(processes),
        }
    }

    /// The evidence of iteration 3: a correctness run of two cases (one skipped), and a benchmark run of
    /// `n` configs whose GPU was watched.
    pub(super) fn evidence(n: usize) -> Evidence {
        Evidence {
            tool_version: crate::VERSION.to_string(),
            iteration: 3,
            gpu: Some("NVIDIA H200, 9.0, 580.159.04".into()),
            gpu_state: Some(h200("")),
            statistic: "median".into(),
            thresholds: Thresholds::DEFAULT,
            runs: vec![
                RunFile::new("correctness", junit(r#"<testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b"><skipped/></testcase></testsuite>"#.into())),
                RunFile {
                    name: "benchmark".into(),
                    records: junit(benchmark_junit(n)),
                    gpu: Some(GpuWatch {
                        before: Some(h200("")),
                        after: Some(h200("7, a.out, 512\n")),
                    }),
                    compiled: None,
                    cuda_device: None,
                },
            ],
            compile: None,
            binding: None,
            ended: Ended::default(),
        }
    }

    #[test]
    fn notes_written_before_the_gpu_was_watched_still_read() {
        let mut old = evidence(1);
        old.gpu_state = None;
        old.runs[1].gpu = None;
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("gpu_state") && !json.contains("\"before\""));
        assert_eq!(serde_json::from_str::<Evidence>(&json).unwrap(), old);
    }

    #[test]
    fn a_note_names_the_rules_that_decided_it_and_older_notes_read_as_the_first() {
        let evidence = evidence(1);
        let json = serde_json::to_value(&evidence).unwrap();
        assert_eq!(json["ended"], serde_json::json!({"rules": "ticked"}));
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("ended");
        let read: Evidence = serde_json::from_value(older).unwrap();
        assert_eq!(read.ended.rules, Rules::First);
        let mut crashed_older = json;
        crashed_older["ended"] = serde_json::json!({"crash": {"stage": "rounds", "why": "x"}});
        let read: Evidence = serde_json::from_value(crashed_older).unwrap();
        assert_eq!(read.ended.rules, Rules::First);
        assert!(read.ended.crash.is_some());
    }

    #[test]
    fn each_case_is_measured_on_one_gpu_and_older_notes_on_one() {
        let run = |name: &str, gpu: Option<&str>| RunFile {
            cuda_device: gpu.map(str::to_string),
            ..RunFile::new(name, junit(benchmark_junit(1)))
        };
        let mut evidence = evidence(1);
        let case = "tests.ops.test_rms_norm.Test_RMSNorm::test_perf[cutile-static_persistent-0-1024-torch.float16]";
        evidence.runs = vec![
            run("round-1-candidate", None),
            run("round-1-baseline", None),
        ];
        assert_eq!(
            evidence.gpu_of_cases().unwrap(),
            BTreeMap::from([(case.to_string(), "-".to_string())])
        );
        evidence.runs = vec![
            run("round-1-gpu1-candidate", Some("1")),
            run("round-1-gpu1-baseline", Some("1")),
            run("confirm-round-1-gpu1-baseline", Some("1")),
        ];
        assert_eq!(
            evidence.gpu_of_cases().unwrap(),
            BTreeMap::from([(case.to_string(), "1".to_string())])
        );
        evidence.runs.push(run("round-2-baseline", Some("0")));
        assert_eq!(
            evidence.gpu_of_cases().unwrap_err(),
            "the run round-2-baseline measured a case on GPU 0 that other runs measured on GPU 1"
        );
    }
}
