//! The diagnoses cache: one git note per profiled commit (`refs/notes/cutile-perf-diagnose`) with each
//! config's diagnosis and the commit's compile facts. `diagnose` writes it; `compare` and `report` read it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Diagnosis;
use super::compile::CompileFacts;
use crate::git::Repo;

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
