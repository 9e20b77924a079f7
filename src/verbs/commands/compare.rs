//! `compare`: two iterations side by side, from the history, the compile facts of each iteration's
//! evidence note (else of the diagnose cache) and the diagnoses cached by `diagnose`: what the kernel
//! diff touched, how each config's latency moved, and which measured numbers moved with it, in one
//! sentence per config.

use std::collections::BTreeSet;

use anyhow::Result;
use serde::Serialize;

use crate::features::diagnose::cache::{Note, recall};
use crate::features::diagnose::{Diagnosis, Profile};
use crate::record::evidence::Evidence;
use crate::record::history::{Configs, History, code_commit, iteration, require_history};
use crate::record::session::{Iteration, short};
use crate::rules::compile::CompileFacts;
use crate::rules::stats::change_pct;
use crate::system::git::Repo;
use crate::system::ui::{self, Render, Ui};

/// A percentage metric moves when it changes by at least this many points.
const PCT_POINTS_MOVED: f64 = 5.0;
/// A duration or byte count moves when it changes by at least this share.
const RELATIVE_MOVED: f64 = 0.05;

#[derive(Debug, Serialize)]
pub struct CompareReport {
    pub a: Side,
    pub b: Side,
    /// `git diff --stat` between the two iterations' code, over the session's allowed paths.
    pub diff_stat: String,
    pub configs: Vec<ConfigDelta>,
    /// Compile facts whose totals differ: name, A, B.
    pub compile: Vec<Delta>,
}

#[derive(Debug, Serialize)]
pub struct Side {
    pub iteration: u32,
    pub commit: String,
    pub status: String,
    pub latency_ms: Option<f64>,
    pub diagnosed: bool,
    /// Where its compile facts were read: `evidence` (the iteration's note) or `diagnose` (the cache).
    pub compile_facts: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct ConfigDelta {
    pub test: String,
    pub pass: String,
    pub a_ms: Option<f64>,
    pub b_ms: Option<f64>,
    pub change_pct: Option<f64>,
    pub cause_a: Option<String>,
    pub cause_b: Option<String>,
    /// ncu metrics that moved.
    pub metrics: Vec<Delta>,
    /// What moved, in one sentence.
    pub summary: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delta {
    pub name: String,
    pub a: f64,
    pub b: f64,
    pub unit: &'static str,
}

impl Delta {
    fn text(&self) -> String {
        match self.unit {
            "%" => format!("{} {:.0}% -> {:.0}%", self.name, self.a, self.b),
            "us" => format!("{} {:.1} -> {:.1} us", self.name, self.a, self.b),
            _ => format!("{} {} -> {}", self.name, self.a, self.b),
        }
    }
}

/// Iterations `a` (the earlier) and `b` side by side.
pub fn run(repo: &Repo, number_a: u32, number_b: u32) -> Result<CompareReport> {
    let history = require_history(repo, Configs::All)?;
    let (a, b) = (
        iteration(&history, number_a)?,
        iteration(&history, number_b)?,
    );
    let (commit_a, commit_b) = (
        code_commit(&history, number_a)?,
        code_commit(&history, number_b)?,
    );
    let mut diff_args = vec!["diff", "--stat", &commit_a, &commit_b, "--"];
    diff_args.extend(history.session.allowed.iter().map(String::as_str));
    let diff_stat = repo.git(&diff_args)?.trim_end().to_string();
    let (note_a, note_b) = (recall(repo, &commit_a), recall(repo, &commit_b));
    let facts_a = compile_facts(repo, &history, number_a, note_a.as_ref());
    let facts_b = compile_facts(repo, &history, number_b, note_b.as_ref());
    let compile = compile_deltas(
        facts_a.as_ref().map(|f| &f.0),
        facts_b.as_ref().map(|f| &f.0),
    );
    Ok(CompareReport {
        configs: config_deltas(a, b, note_a.as_ref(), note_b.as_ref(), &compile),
        a: side(a, commit_a, note_a.is_some(), facts_a.map(|f| f.1)),
        b: side(b, commit_b, note_b.is_some(), facts_b.map(|f| f.1)),
        diff_stat,
        compile,
    })
}

impl Render for CompareReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        write!(ui.out(), "{}", render(self))?;
        Ok(())
    }
}

fn side(
    it: &Iteration,
    commit: String,
    diagnosed: bool,
    compile_facts: Option<&'static str>,
) -> Side {
    Side {
        iteration: it.number,
        commit,
        status: it.status.to_string(),
        latency_ms: it.latency_ms,
        diagnosed,
        compile_facts,
    }
}

/// Iteration `number`'s compile facts and where they were read: its evidence note first (what `step`
/// kept), else the diagnose cache on its code's commit.
fn compile_facts(
    repo: &Repo,
    history: &History,
    number: u32,
    cached: Option<&Note>,
) -> Option<(CompileFacts, &'static str)> {
    let (commit, _) = &history.iterations[number as usize];
    // a note that is not ours is `verify`'s finding; here it only means no facts
    let noted = Evidence::of(repo, commit)
        .ok()
        .flatten()
        .and_then(|e| e.compile);
    match noted {
        Some(facts) => Some((facts, "evidence")),
        None => cached
            .and_then(|n| n.compile.clone())
            .map(|facts| (facts, "diagnose")),
    }
}

/// Every config either iteration measured, A's order first.
fn config_deltas(
    a: &Iteration,
    b: &Iteration,
    note_a: Option<&Note>,
    note_b: Option<&Note>,
    compile: &[Delta],
) -> Vec<ConfigDelta> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for m in a.configs.iter().chain(&b.configs) {
        if !keys.contains(&(m.pass.as_str(), m.test.as_str())) {
            keys.push((&m.pass, &m.test));
        }
    }
    let value = |it: &Iteration, pass: &str, test: &str| {
        it.configs
            .iter()
            .find(|m| m.pass == pass && m.test == test)
            .map(|m| m.value)
    };
    let diagnosis =
        |note: Option<&Note>, test: &str| note.and_then(|n| n.configs.get(test)).cloned();
    keys.into_iter()
        .map(|(pass, test)| {
            let (a_ms, b_ms) = (value(a, pass, test), value(b, pass, test));
            let (da, db) = (diagnosis(note_a, test), diagnosis(note_b, test));
            let metrics = match (&da, &db) {
                (Some(x), Some(y)) => metric_deltas(&x.profile, &y.profile),
                _ => Vec::new(),
            };
            let change = a_ms.zip(b_ms).map(|(x, y)| change_pct(x, y));
            ConfigDelta {
                summary: sentence(test, change, da.as_ref(), db.as_ref(), &metrics, compile),
                test: test.to_string(),
                pass: pass.to_string(),
                a_ms,
                b_ms,
                change_pct: change,
                cause_a: da.map(|d| d.cause.to_string()),
                cause_b: db.map(|d| d.cause.to_string()),
                metrics,
            }
        })
        .collect()
}

/// The ncu numbers that moved between two profiles of one config.
pub fn metric_deltas(a: &Profile, b: &Profile) -> Vec<Delta> {
    let pct_metrics = [
        ("DRAM throughput", a.dram_pct, b.dram_pct),
        ("memory throughput", a.memory_pct, b.memory_pct),
        ("SM throughput", a.sm_pct, b.sm_pct),
        (
            "achieved occupancy",
            a.achieved_occupancy_pct,
            b.achieved_occupancy_pct,
        ),
        ("tensor pipe", a.tensor_pipe_pct, b.tensor_pipe_pct),
    ];
    let mut out: Vec<Delta> = pct_metrics
        .into_iter()
        .filter_map(|(name, x, y)| {
            let (x, y) = (x?, y?);
            ((y - x).abs() >= PCT_POINTS_MOVED).then(|| Delta {
                name: name.to_string(),
                a: x,
                b: y,
                unit: "%",
            })
        })
        .collect();
    let relative = [
        ("duration", a.duration_us, b.duration_us, "us"),
        ("local-memory bytes", a.local_bytes, b.local_bytes, ""),
        ("waves per SM", a.waves_per_sm, b.waves_per_sm, ""),
    ];
    out.extend(relative.into_iter().filter_map(|(name, x, y, unit)| {
        let (x, y) = (x?, y?);
        let moved = if x == 0.0 {
            y != 0.0
        } else {
            ((y - x) / x).abs() >= RELATIVE_MOVED
        };
        moved.then(|| Delta {
            name: name.to_string(),
            a: x,
            b: y,
            unit,
        })
    }));
    if let (Some(x), Some(y)) = (a.registers_per_thread, b.registers_per_thread)
        && x != y
    {
        out.push(Delta {
            name: "registers/thread".to_string(),
            a: x,
            b: y,
            unit: "",
        });
    }
    out
}

/// Compile-fact totals that differ between the two iterations.
fn compile_deltas(a: Option<&CompileFacts>, b: Option<&CompileFacts>) -> Vec<Delta> {
    let (Some(a), Some(b)) = (a, b) else {
        return Vec::new();
    };
    let (ta, tb) = (a.totals(), b.totals());
    let names: BTreeSet<&str> = ta.keys().chain(tb.keys()).copied().collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (x, y) = (
                ta.get(name).copied().unwrap_or(0),
                tb.get(name).copied().unwrap_or(0),
            );
            (x != y).then(|| Delta {
                name: name.to_string(),
                a: x as f64,
                b: y as f64,
                unit: "",
            })
        })
        .collect()
}

/// "test: 0.41 ms -> 0.60 ms (+45.8%); memory -> memory; DRAM throughput 88% -> 61%, TMA stores 0 -> 2".
pub fn sentence(
    test: &str,
    change: Option<f64>,
    a: Option<&Diagnosis>,
    b: Option<&Diagnosis>,
    metrics: &[Delta],
    compile: &[Delta],
) -> String {
    let name = test.rsplit("::").next().unwrap_or(test);
    let mut parts = vec![match change {
        Some(c) => format!("{name}: {c:+.1}%"),
        None => format!("{name}: measured in one iteration only"),
    }];
    match (a, b) {
        (Some(x), Some(y)) if x.cause == y.cause => parts.push(format!("still {}-bound", x.cause)),
        (Some(x), Some(y)) => parts.push(format!("bottleneck {} -> {}", x.cause, y.cause)),
        _ => parts.push(
            "not diagnosed in both (run `git cutile-perf diagnose N --config TEST_ID` on each)"
                .into(),
        ),
    }
    let moved: Vec<String> = metrics.iter().chain(compile).map(Delta::text).collect();
    if !moved.is_empty() {
        parts.push(moved.join(", "));
    } else if a.is_some() && b.is_some() {
        parts.push("no profiled number moved".into());
    }
    parts.join("; ")
}

fn render(r: &CompareReport) -> String {
    let side = |s: &Side| {
        format!(
            "iteration {} ({}, {}, {} ms{})",
            s.iteration,
            short(&s.commit),
            s.status,
            crate::record::session::fmt_ms(s.latency_ms),
            if s.diagnosed { ", diagnosed" } else { "" }
        ) + &s
            .compile_facts
            .map_or(String::new(), |from| format!(", compile facts from {from}"))
    };
    let mut out = format!(
        "{} {}\n   vs {}\n",
        ui::bold("compare"),
        side(&r.a),
        side(&r.b)
    );
    out += &format!(
        "diff:\n  {}\n",
        if r.diff_stat.is_empty() {
            "(no change to the allowed paths)".to_string()
        } else {
            r.diff_stat.replace('\n', "\n  ")
        }
    );
    if r.a.compile_facts.is_some() && r.b.compile_facts.is_some() {
        let moved: Vec<String> = r.compile.iter().map(Delta::text).collect();
        out += &format!(
            "compile:\n  {}\n",
            if moved.is_empty() {
                "no compile fact moved".to_string()
            } else {
                moved.join(", ")
            }
        );
    }
    out += "configs:\n";
    for c in &r.configs {
        out += &format!(
            "  {} {}  {} -> {} ms\n    {}\n",
            c.test,
            c.pass,
            crate::record::session::fmt_ms(c.a_ms),
            crate::record::session::fmt_ms(c.b_ms),
            c.summary
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::diagnose::diagnose;

    fn profile(dram: f64, sm: f64, duration: f64) -> Profile {
        Profile {
            kernel: "k".into(),
            dram_pct: Some(dram),
            sm_pct: Some(sm),
            duration_us: Some(duration),
            registers_per_thread: Some(40.0),
            ..Profile::default()
        }
    }

    #[test]
    fn what_moved_in_one_sentence() {
        let (a, b) = (profile(88.0, 30.0, 410.0), profile(61.0, 33.0, 598.0));
        let metrics = metric_deltas(&a, &b);
        let names: Vec<&str> = metrics.iter().map(|d| d.name.as_str()).collect();
        // SM moved 3 points: not enough to mention; registers did not change
        assert_eq!(names, ["DRAM throughput", "duration"]);
        let compile = [Delta {
            name: "TMA stores".into(),
            a: 0.0,
            b: 2.0,
            unit: "",
        }];
        let text = sentence(
            "t.T::test_perf[large]",
            Some(45.8),
            Some(&diagnose(&a)),
            Some(&diagnose(&b)),
            &metrics,
            &compile,
        );
        assert_eq!(
            text,
            "test_perf[large]: +45.8%; still memory-bound; DRAM throughput 88% -> 61%, duration 410.0 -> 598.0 us, TMA stores 0 -> 2"
        );
        let moved_cause = sentence(
            "x",
            None,
            Some(&diagnose(&a)),
            Some(&diagnose(&profile(20.0, 20.0, 1.0))),
            &[],
            &[],
        );
        assert_eq!(
            moved_cause,
            "x: measured in one iteration only; bottleneck memory -> latency; no profiled number moved"
        );
        assert!(sentence("x", Some(1.0), None, None, &[], &[]).contains("not diagnosed in both"));
    }
}
