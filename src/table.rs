//! The results table, built from iteration records only, so that deleting `sandbox/perf_results.md`
//! and regenerating it gives the same bytes.

use crate::session::{Iteration, fmt_ms};

pub const COLUMNS: [&str; 5] = [
    "iteration",
    "optimization",
    "latency_ms",
    "correctness",
    "status",
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
            escape_cell(&it.optimization),
            fmt_ms(it.latency_ms),
            it.correctness.to_string(),
            it.status.to_string(),
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
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Decision, Status};
    use crate::session::tests::iteration;

    #[test]
    fn renders_exact_markdown() {
        let mut crashed = iteration(2, Status::Crash, None, Decision::TryNext);
        crashed.optimization = "a|b\\c".into();
        let rows = [
            iteration(0, Status::Keep, Some(0.0), Decision::Continue),
            iteration(1, Status::Revert, Some(3.0), Decision::TryNext),
            crashed,
        ];
        assert_eq!(
            markdown(&rows),
            "| iteration | optimization | latency_ms | correctness | status |\n\
             |---|---|---|---|---|\n\
             | 0 | opt 0 | 1.000000 | PASS | keep |\n\
             | 1 | opt 1 | 1.030000 | PASS | revert |\n\
             | 2 | a\\|b\\\\c | n/a | PASS | crash |\n"
        );
    }
}
