//! One pytest run's records file as a note keeps it: its name, its GPU around it, the kernels it
//! compiled, and its printed output bounded so that a kernel printing megabytes keeps the note small.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::rules::compile::CompiledKernel;
use crate::rules::records::{CaseReport, RecordFile};
use crate::system::gpu::{GpuProcess, GpuState};

/// The most of one case's printed output (`<system-out>`, `<system-err>`) a note keeps: a kernel that
/// prints megabytes per call would otherwise make a note of tens of megabytes.
const OUTPUT_KEPT: usize = 64 * 1024;
/// What stands where printed output was cut, with how many bytes.
const CUT: &str = "cutile-perf: cut from this output";

/// One pytest run's records file, exactly as it was read and parsed, and its format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    /// `correctness`; `benchmark-<n>` at the baseline; `round-<n>-candidate` and `round-<n>-baseline` for
    /// a step's paired rounds, `confirm-round-...` for the second measurement of a suspicious gain.
    pub name: String,
    #[serde(flatten)]
    pub records: RecordFile,
    /// The GPU just before and just after a benchmark run (none in older notes, or without a GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuWatch>,
    /// For each side's first round (in older notes, a compile run of its own, `compile-<side>`): the
    /// kernels that side's code compiled, as cuda-tile dumped them, that no re-roll compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiled: Option<Vec<CompiledKernel>>,
    /// The GPU that ran this benchmark run, as `CUDA_VISIBLE_DEVICES` named it (`step --gpus`); none in
    /// older notes or where the environment chose it: one GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_device: Option<String>,
}

/// The GPU's state around one run: clocks and temperature as it started and ended, and who else used
/// the GPU then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuWatch {
    pub before: Option<GpuState>,
    pub after: Option<GpuState>,
}

impl GpuWatch {
    /// Processes seen on the GPU before or after the run (the run's own had not started or had ended).
    pub fn others(&self) -> Vec<GpuProcess> {
        let mut seen: Vec<GpuProcess> = Vec::new();
        for state in [&self.before, &self.after].into_iter().flatten() {
            for p in &state.processes {
                if !seen.iter().any(|s| s.pid == p.pid) {
                    seen.push(p.clone());
                }
            }
        }
        seen
    }

    /// `before SM 1980/1980 MHz, 41 C; after SM 1980/1980 MHz, 47 C; others: pid 7 a.out`
    pub fn describe(&self) -> String {
        let side = |label: &str, state: &Option<GpuState>| match state {
            Some(state) => format!("{label} {}", state.gpu.state_line()),
            None => format!("{label} unread"),
        };
        let mut text = format!(
            "{}; {}",
            side("before", &self.before),
            side("after", &self.after)
        );
        let others = self.others();
        if !others.is_empty() {
            text += &format!(
                "; others: {}",
                crate::system::gpu::describe_processes(&others)
            );
        }
        text
    }
}

impl RunFile {
    /// The run named `name` with the file it wrote, as it was read for its outcome.
    pub fn new(name: &str, records: RecordFile) -> RunFile {
        RunFile {
            name: name.to_string(),
            records,
            gpu: None,
            compiled: None,
            cuda_device: None,
        }
    }

    /// Whether this is side `side`'s run in round `round` of the rounds named `prefix`, on any GPU:
    /// `<prefix>-<round>-<side>`, or `<prefix>-<round>-gpu<gpu>-<side>` (`paired::run_name`).
    pub fn of_round(&self, prefix: &str, round: usize, side: &str) -> bool {
        let Some(rest) = self.name.strip_prefix(&format!("{prefix}-{round}-")) else {
            return false;
        };
        rest == side
            || rest
                .strip_prefix("gpu")
                .and_then(|rest| rest.strip_suffix(side)?.strip_suffix('-'))
                .is_some_and(|gpu| !gpu.is_empty() && !gpu.contains('-'))
    }

    pub fn cases(&self) -> Result<Vec<CaseReport>> {
        self.records
            .cases()
            .with_context(|| format!("the {} run's records", self.name))
    }

    /// The run with each case's printed output beyond [`OUTPUT_KEPT`] cut to its head, its tail and the
    /// record lines between them, a line saying how much was cut. Kept whole where the cut would change
    /// what its cases read as: the replay of the verdict reads them.
    pub(super) fn bounded(self) -> RunFile {
        let Some(text) = bound_output(&self.records.text) else {
            return self;
        };
        let cut = RunFile {
            records: RecordFile {
                text,
                ..self.records.clone()
            },
            ..self.clone()
        };
        match (self.cases(), cut.cases()) {
            (Ok(whole), Ok(kept)) if whole == kept => cut,
            _ => self,
        }
    }

    /// Whether some of its printed output was cut ([`RunFile::bounded`]).
    pub(super) fn was_cut(&self) -> bool {
        self.records.text.contains(CUT)
    }
}

/// `text` with the content of each `<system-out>` and `<system-err>` longer than [`OUTPUT_KEPT`] cut;
/// `None` where none is.
fn bound_output(text: &str) -> Option<String> {
    let mut bounded = None;
    for tag in ["system-out", "system-err"] {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let source = bounded.as_deref().unwrap_or(text);
        let mut out = String::new();
        let mut rest = source;
        let mut cut_any = false;
        while let Some(at) = rest.find(&open) {
            let body = at + open.len();
            let Some(length) = rest[body..].find(&close) else {
                break;
            };
            out.push_str(&rest[..body]);
            let content = &rest[body..body + length];
            cut_any |= content.len() > OUTPUT_KEPT;
            match content.len() > OUTPUT_KEPT {
                true => out.push_str(&cut_output(content)),
                false => out.push_str(content),
            }
            rest = &rest[body + length..];
        }
        if cut_any {
            out.push_str(rest);
            bounded = Some(out);
        }
    }
    bounded
}

/// Printed output cut to its first and last lines (half of [`OUTPUT_KEPT`] each) and the record lines
/// (`Cutile: ...`) between them; cut at line ends, so an escaped character is never split.
fn cut_output(content: &str) -> String {
    let bytes = content.as_bytes();
    let half = OUTPUT_KEPT / 2;
    let head = bytes[..half]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |at| at + 1);
    let from = bytes.len() - half;
    let tail = bytes[from..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |at| from + at + 1);
    let middle = &content[head..tail];
    let records: String = middle
        .split_inclusive('\n')
        .filter(|line| line.trim_start().starts_with("Cutile:"))
        .collect();
    format!(
        "{}[{CUT}: {} bytes; the record lines in them kept]\n{records}{}",
        &content[..head],
        middle.len() - records.len(),
        &content[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::evidence::Evidence;
    use crate::record::evidence::tests::{benchmark_junit, evidence, junit};

    #[test]
    fn a_run_keeps_its_format_beside_its_bytes_and_older_notes_read_as_junit() {
        let run = &evidence(1).runs[0];
        let json = serde_json::to_value(run).unwrap();
        assert_eq!(json["name"], "correctness");
        assert_eq!(json["format"], "junit");
        assert_eq!(json["text"], run.records.text.as_str());
        let old = serde_json::json!({"name": "correctness", "junit": run.records.text});
        assert_eq!(&serde_json::from_value::<RunFile>(old).unwrap(), run);
    }

    #[test]
    fn a_round_run_is_known_by_its_name_on_any_gpu() {
        let run = |name: &str| RunFile::new(name, junit(String::new()));
        assert!(run("round-2-candidate").of_round("round", 2, "candidate"));
        assert!(run("round-2-gpu1-candidate").of_round("round", 2, "candidate"));
        assert!(!run("round-2-gpu1-candidate").of_round("round", 2, "baseline"));
        assert!(!run("round-2-gpu1-candidate").of_round("round", 1, "candidate"));
        assert!(!run("round-12-candidate").of_round("round", 1, "candidate"));
        assert!(!run("confirm-round-2-candidate").of_round("round", 2, "candidate"));
        assert!(run("confirm-round-2-gpu0-baseline").of_round("confirm-round", 2, "baseline"));
        assert!(!run("round-2-gpu-candidate").of_round("round", 2, "candidate"));
    }

    #[test]
    fn printed_output_is_kept_bounded_with_its_record_lines_and_the_cut_said() {
        let noise = "x".repeat(99) + "\n";
        let printed = format!(
            "{}Cutile: {{'forward': {{'median': 0.5}}}} ms\n{}",
            noise.repeat(20_000),
            noise.repeat(20_000)
        );
        let xml = format!(
            r#"<testsuite><testcase classname="t" name="test_perf[a]"><system-out>{printed}</system-out><system-err>{}</system-err></testcase></testsuite>"#,
            noise.repeat(40_000)
        );
        let session = crate::record::session::tests::session();
        let whole = RunFile::new("round-1-candidate", junit(xml));
        let evidence = Evidence::new(&session, 1, None, vec![whole.clone()]);
        let kept = &evidence.runs[0];
        assert!(whole.records.text.len() > 8_000_000);
        assert!(
            kept.records.text.len() < 3 * OUTPUT_KEPT,
            "{}",
            kept.records.text.len()
        );
        assert_eq!(kept.cases().unwrap(), whole.cases().unwrap());
        assert!(kept.cases().unwrap()[0].record.is_some());
        assert!(kept.records.text.contains(&format!("[{CUT}: ")));
        let note = evidence.to_note().unwrap();
        assert!(note.contains("printed output cut\n"), "{}", &note[..400]);
        // a short output is kept as it was
        let short = RunFile::new("correctness", junit(benchmark_junit(2)));
        assert_eq!(short.clone().bounded(), short);
    }
}
