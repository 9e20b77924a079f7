//! The diagnose cache: one git note per profiled commit (`refs/notes/cutile-perf-diagnose`), holding
//! its diagnoses per config and its compile facts; `step` and `diagnose` write it, `compare` reads it.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::Diagnosis;
use super::profile::Profiled;
use crate::rules::compile::CompileFacts;
use crate::system::git::{NotesLock, Repo};

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
    recall_from(repo, NOTES_REF, commit)
}

/// `commit`'s note in notes ref `notes`, if it holds one of ours.
fn recall_from(repo: &Repo, notes: &str, commit: &str) -> Option<Note> {
    let text = repo.git(&["notes", "--ref", notes, "show", commit]).ok()?;
    serde_json::from_str(&text).ok()
}

/// Adds a diagnosis to `commit`'s note (the one `compare` reads), keeping its other configs, those
/// another command wrote meanwhile included.
pub fn remember(repo: &Repo, commit: &str, profiled: &Profiled) -> Result<()> {
    NotesLock::take(repo)?
        .update(NOTES_REF, |notes| {
            let mut note = recall_from(repo, notes, commit).unwrap_or_default();
            note.configs
                .insert(profiled.config.clone(), profiled.diagnosis.clone());
            if profiled.compile.is_some() {
                note.compile = profiled.compile.clone();
            }
            let text = serde_json::to_string(&note)?;
            repo.git(&["notes", "--ref", notes, "add", "-f", "-m", &text, commit])
                .map(drop)
        })
        .context("cannot cache the diagnosis in a git note")
}
