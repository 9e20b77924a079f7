//! The files of one checkout as the inspector reads them: each parsed once, a canonical dotted name
//! found in its file under `src/`, and the imports of a file followed to the files that matter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};

use super::module::{self, ModuleFacts};
use crate::rules::hint::hinted;

/// A parsed file of the checkout.
pub(super) struct File {
    pub(super) path: String,
    pub(super) facts: ModuleFacts,
}

/// A file that `follow_imports` reached: the top-level names reached there, and what led there.
pub(super) struct Followed {
    pub(super) path: String,
    pub(super) tops: BTreeSet<String>,
    pub(super) reason: String,
}

/// Reads and inspects files of one checkout, each once.
pub(super) struct Files<'r> {
    root: &'r Path,
    capability: Option<(u32, u32)>,
    parsed: BTreeMap<String, Option<File>>,
}

impl<'r> Files<'r> {
    /// `capability` picks the autotune branches.
    pub(super) fn new(root: &'r Path, capability: Option<(u32, u32)>) -> Files<'r> {
        Files {
            root,
            capability,
            parsed: BTreeMap::new(),
        }
    }

    /// The file at `path`, parsed; `None` when there is none.
    pub(super) fn get(&mut self, path: &str) -> Result<Option<&File>> {
        if !self.parsed.contains_key(path) {
            let full = self.root.join(path);
            let file = if full.is_file() {
                let text =
                    std::fs::read_to_string(&full).with_context(|| format!("reading {path}"))?;
                let facts = module::analyze(&text, &package_of(path), self.capability)
                    .map_err(|e| {
                        hinted(
                            format!("{path}: {e}"),
                            "inspect parses the file without running it; fix the syntax, or pass --class and \
                             --allow by hand",
                        )
                    })?;
                Some(File {
                    path: path.to_string(),
                    facts,
                })
            } else {
                None
            };
            self.parsed.insert(path.to_string(), file);
        }
        Ok(self.parsed[path].as_ref())
    }

    /// The facts of a file `get` or `follow_imports` has already parsed.
    pub(super) fn parsed(&self, path: &str) -> &ModuleFacts {
        &self.parsed[path]
            .as_ref()
            .expect("followed files are parsed")
            .facts
    }

    /// The file under `src/` defining the canonical name `tilegym.a.b.name`, and `name`.
    fn definition_of(&mut self, full: &str) -> Result<Option<(String, String)>> {
        let parts: Vec<&str> = full.split('.').collect();
        for split in (1..parts.len()).rev() {
            let module = parts[..split].join("/");
            let name = parts[split].to_string();
            for candidate in [
                format!("src/{module}.py"),
                format!("src/{module}/__init__.py"),
            ] {
                if self.get(&candidate)?.is_some() {
                    return Ok(Some((candidate, name)));
                }
            }
        }
        Ok(None)
    }

    /// What other files under `src/tilegym` the names `imports` lead to and that launch, tune or
    /// define a kernel.
    pub(super) fn follow_imports(
        &mut self,
        from: &str,
        imports: &BTreeSet<String>,
    ) -> Result<Vec<Followed>> {
        let mut found: Vec<Followed> = Vec::new();
        let mut pending: Vec<(String, String)> = imports
            .iter()
            .filter(|i| i.starts_with("tilegym."))
            .map(|i| (i.clone(), from.to_string()))
            .collect();
        let mut seen = BTreeSet::new();
        while let Some((full, via)) = pending.pop() {
            if !seen.insert(full.clone()) {
                continue;
            }
            let Some((path, name)) = self.definition_of(&full)? else {
                continue;
            };
            if path == from {
                continue;
            }
            let facts = self.parsed(&path);
            let (tops, more) = facts.reach(&[name.as_str()]);
            let relevant = facts.kernels.iter().any(|k| tops.contains(&k.name))
                || facts.launches.iter().any(|l| tops.contains(&l.top))
                || facts.tunings.iter().any(|t| tops.contains(&t.top));
            if !relevant {
                continue;
            }
            pending.extend(
                more.into_iter()
                    .filter(|i| i.starts_with("tilegym."))
                    .map(|i| (i, path.clone())),
            );
            match found.iter_mut().find(|f| f.path == path) {
                Some(followed) => followed.tops.extend(tops),
                None => found.push(Followed {
                    path,
                    tops,
                    reason: format!("{via} uses {name}"),
                }),
            }
        }
        Ok(found)
    }

    /// Keeps local kernel names, and imported names whose module defines them as kernels.
    pub(super) fn confirmed_kernels(&mut self, names: &[String]) -> Result<Vec<String>> {
        let mut kept = Vec::new();
        for name in names {
            let confirmed = match name.contains('.') {
                false => true,
                true => match self.definition_of(name)? {
                    Some((path, local)) => self
                        .get(&path)?
                        .is_some_and(|f| f.facts.kernels.iter().any(|k| k.name == local)),
                    None => false,
                },
            };
            if confirmed {
                kept.push(name.clone());
            }
        }
        Ok(kept)
    }
}

/// `src/tilegym/ops/cutile/x.py` is in package `tilegym.ops.cutile`.
fn package_of(path: &str) -> String {
    let inner = path.strip_prefix("src/").unwrap_or(path);
    let mut parts: Vec<&str> = inner.split('/').collect();
    parts.pop();
    parts.join(".")
}
