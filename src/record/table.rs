//! The results table, built from iteration records only, so that deleting `sandbox/perf_results.md`
//! and regenerating it gives the same bytes.

use crate::record::session::{Iteration, fmt_ms};

pub const COLUMNS: [&str; 7] = [
    "iteration",
    "opt",
    "optimization",
    "latency_ms",
    "correctness",
    "status",
    "reason",
];

/// One Markdown table, one row per iteration (reverted and crashed included).
pub fn markdown<'a>(iterations: impl IntoIterator<Item = &'a Iteration>) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len())
    );
    for it in iterations {
        let cells = [
            it.number.to_string(),
            it.letter.clone().unwrap_or_default(),
            escape_cell(&it.optimization),
            fmt_ms(it.latency_ms),
            it.correctness.to_string(),
            it.status.to_string(),
            escape_cell(&it.short_reason()),
        ];
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// A pipe would end the cell; a backslash before it would be read as an escape of our escape.
fn escape_cell(text: &str) -> String {
    text.replace('\\', "\\\\").replace('|', "\\|")
}

/// The table as JSON rows, with the same fields as the columns plus what an agent needs to act on.
#[derive(Debug, serde::Serialize)]
pub struct Row<'a> {
    pub iteration: u32,
    pub optimization: &'a str,
    pub latency_ms: Option<f64>,
    pub correctness: &'static str,
    pub status: &'static str,
    pub change_pct: Option<f64>,
    pub decision: &'static str,
    pub opt: Option<&'a str>,
    /// The reason in a few words, as the plain table's cell.
    pub reason: String,
}

impl<'a> From<&'a Iteration> for Row<'a> {
    fn from(it: &'a Iteration) -> Self {
        Row {
            iteration: it.number,
            optimization: &it.optimization,
            latency_ms: it.latency_ms,
            correctness: it.correctness.as_str(),
            status: it.status.as_str(),
            change_pct: it.change_pct,
            decision: it.decision.as_str(),
            opt: it.letter.as_deref(),
            reason: it.short_reason(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::{Decision, Status};

    #[test]
    fn renders_exact_markdown() {
        let mut crashed = iteration(2, Status::Crash, None, Decision::TryNext);
        crashed.optimization = "a|b\\c".into();
        let mut reverted = iteration(1, Status::Revert, Some(-3.0), Decision::TryNext);
        reverted.letter = Some("B".into());
        reverted.reason =
            "t1 forward: +3.00% (+2.91% to +3.09%), slower than the 2% limit beyond noise".into();
        let rows = [
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            reverted,
            crashed,
        ];
        assert_eq!(
            markdown(&rows),
            "| iteration | opt | optimization | latency_ms | correctness | status | reason |\n\
             |---|---|---|---|---|---|---|\n\
             | 0 |  | opt 0 | 1.000000 | PASS | keep | r |\n\
             | 1 | B | opt 1 | 0.970000 | PASS | revert | t1 forward: +3.00% |\n\
             | 2 |  | a\\|b\\\\c | n/a | PASS | crash | r |\n"
        );
    }
}
