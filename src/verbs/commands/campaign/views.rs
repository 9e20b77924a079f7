//! What `campaign status`, `table` and `report` show: the record with each session read from its
//! worktree, as text, JSON or one HTML page.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use super::summary::{self, Row, Speedup};
use super::work::campaign_dir;
use crate::record::campaign::{self, Entry, State};
use crate::system::git::Repo;
use crate::system::ui::{Render, Ui};

/// The campaign as `start`, `resume`, `status` and `table` report it.
#[derive(Debug, Serialize)]
pub struct CampaignReport {
    pub name: String,
    pub base: String,
    pub runner: String,
    pub kernels: Vec<Row>,
    /// How many kernels are in each state.
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The geometric-mean speedup over the kernels with a session, with its interval.
    pub speedup: Option<Speedup>,
    #[serde(skip)]
    table_only: bool,
}

/// `campaign status` and `campaign table`: the record, each session read from its worktree.
pub fn report(repo: &Repo, name: Option<&str>, table_only: bool) -> Result<CampaignReport> {
    let record = campaign::require(repo, name)?;
    let kernels = summary::rows(&record);
    let mut counts = std::collections::BTreeMap::new();
    for row in &kernels {
        *counts.entry(row.state.clone()).or_insert(0) += 1;
    }
    let speedups: Vec<Speedup> = kernels.iter().filter_map(|row| row.speedup).collect();
    Ok(CampaignReport {
        name: record.name,
        base: record.base,
        runner: record.runner,
        speedup: summary::geometric_mean(&speedups),
        kernels,
        counts,
        table_only,
    })
}

/// What `campaign report` wrote.
#[derive(Debug, Serialize)]
pub struct PageReport {
    pub name: String,
    /// The campaign's page.
    pub report: PathBuf,
    /// Each started session's own report, which the page links.
    pub sessions: Vec<PathBuf>,
}

/// `campaign report`: the page, and each started session's report it links.
pub fn page(repo: &Repo, name: Option<&str>, out: Option<PathBuf>) -> Result<PageReport> {
    let record = campaign::require(repo, name)?;
    let rows = summary::rows(&record);
    let reports: Vec<Option<PathBuf>> = record.kernels.iter().map(session_report).collect();
    let speedups: Vec<Speedup> = rows.iter().filter_map(|row| row.speedup).collect();
    let html = summary::html(&record, &rows, summary::geometric_mean(&speedups), &reports);
    let path = match out {
        Some(path) => path,
        None => campaign_dir(repo, &record.name)?.join("campaign.html"),
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, html).with_context(|| format!("could not write {}", path.display()))?;
    Ok(PageReport {
        name: record.name,
        report: std::path::absolute(&path)?,
        sessions: reports.into_iter().flatten().collect(),
    })
}

/// A started session's report, written in its worktree's sandbox.
fn session_report(entry: &Entry) -> Option<PathBuf> {
    let dir = entry
        .worktree
        .as_deref()
        .filter(|_| entry.state == State::Started)?;
    let repo = Repo::discover(std::path::Path::new(dir)).ok()?;
    let history =
        crate::record::history::read(&repo, crate::record::history::Configs::All).ok()??;
    let path = crate::verbs::commands::in_sandbox(&repo, "perf_results.html").ok()?;
    crate::verbs::commands::write_report(&repo, &history, path)
        .ok()
        .map(|(path, _)| path)
}

impl Render for CampaignReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        let out = ui.out();
        if !self.table_only {
            let counts: Vec<String> = self
                .counts
                .iter()
                .map(|(s, n)| format!("{n} {s}"))
                .collect();
            writeln!(
                out,
                "campaign {} from {} ({}): {}",
                self.name,
                self.base,
                self.runner,
                counts.join(", ")
            )?;
        }
        write!(out, "{}", summary::text(&self.kernels))?;
        let mean = self.speedup.map_or("none yet".into(), |s| s.shown());
        writeln!(
            out,
            "geometric-mean speedup over the started sessions: {mean}"
        )?;
        Ok(())
    }
}

impl Render for PageReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        writeln!(ui.out(), "{}", self.report.display())?;
        Ok(())
    }
}
