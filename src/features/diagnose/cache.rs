//! The diagnose cache: one git note per profiled commit (`refs/notes/cutile-perf-diagnose`), holding
//! its diagnoses per config and its compile facts; `step` and `diagnose` write it, `compare` reads it.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::Diagnosis;
use super::profile::Profiled;
use crate::rules::compile::CompileFacts;
use crate::system::git::Repo;

/// The notes ref that caches diagnoses, one note per profiled commit.
pub const NOTES_REF: &str = "refs/notes/cutile-perf-diagnose";

/// One note: the diagnoses of a commit's code, per config, and its compile facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Note {
    pub configs: BTreeMap<String, Diagnosis>,
    pub compile: Option<CompileFacts>,
}

/// The cached note of `commit`, if any.
pub fn recall(repo: &Repo, commit: &str) -> Option<Note> {
    let text = repo
        .git(&["notes", "--ref", NOTES_REF, "show", commit])
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Adds a diagnosis to `commit`'s note (the one `compare` reads), keeping its other configs.
pub fn remember(repo: &Repo, commit: &str, profiled: &Profiled) -> Result<()> {
    let mut note = recall(repo, commit).unwrap_or_default();
    note.configs
        .insert(profiled.config.clone(), profiled.diagnosis.clone());
    if profiled.compile.is_some() {
        note.compile = profiled.compile.clone();
    }
    let text = serde_json::to_string(&note)?;
    repo.git(&[
        "notes", "--ref", NOTES_REF, "add", "-f", "-m", &text, commit,
    ])
    .context("cannot cache the diagnosis in a git note")?;
    Ok(())
}
