//! Setup that understands the kernel: what a kernel file and the files its registered ops reach hold
//! for cuTile (kernels, launch wrappers, registrations, autotune spaces), the paths a session may
//! change, and a static estimate of the kernel's class. Pure apart from reading files: source text in,
//! report out; nothing is imported or run.

pub mod arch;
pub mod module;
pub mod syntax;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::kernel_class::KernelClass;
use crate::locate::Kernel;
use module::{ConfigGenerator, KernelDef, Launch, ModuleFacts, Registration, TuningCall};

/// One item with the file it is in.
#[derive(Debug, Clone, Serialize)]
pub struct Located<T> {
    pub file: String,
    #[serde(flatten)]
    pub item: T,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegistrationReport {
    pub file: String,
    #[serde(flatten)]
    pub registration: Registration,
    /// The launch wrappers it reaches through calls, as `file:line wrapper`.
    pub wrappers: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllowedPath {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClassEstimate {
    pub class: KernelClass,
    /// `static`: read from the kernel's source, not measured.
    pub source: &'static str,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub kernel: String,
    pub suite: String,
    pub file: String,
    /// The compute capability the autotune branches were evaluated for (`9.0`), if any.
    pub capability: Option<String>,
    pub kernels: Vec<Located<KernelDef>>,
    pub launches: Vec<Located<Launch>>,
    pub registrations: Vec<RegistrationReport>,
    pub tunings: Vec<Located<TuningCall>>,
    pub generators: Vec<Located<ConfigGenerator>>,
    pub allowed_paths: Vec<AllowedPath>,
    pub class: Option<ClassEstimate>,
}

/// A parsed file of the checkout.
struct File {
    path: String,
    facts: ModuleFacts,
}

/// Reads and inspects files of one checkout, each once.
struct Files<'r> {
    root: &'r Path,
    capability: Option<(u32, u32)>,
    parsed: BTreeMap<String, Option<File>>,
}

impl Files<'_> {
    fn get(&mut self, path: &str) -> Result<Option<&File>> {
        if !self.parsed.contains_key(path) {
            let full = self.root.join(path);
            let file = if full.is_file() {
                let text =
                    std::fs::read_to_string(&full).with_context(|| format!("reading {path}"))?;
                let facts = module::analyze(&text, &package_of(path), self.capability)
                    .map_err(|e| anyhow::anyhow!("{path}: {e}\nhint: inspect parses the file without running it; fix the syntax, or pass --class and --allow by hand"))?;
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
}

/// `src/tilegym/ops/cutile/x.py` is in package `tilegym.ops.cutile`.
fn package_of(path: &str) -> String {
    let inner = path.strip_prefix("src/").unwrap_or(path);
    let mut parts: Vec<&str> = inner.split('/').collect();
    parts.pop();
    parts.join(".")
}

/// What other files under `src/tilegym` the names `imports` lead to and that launch, tune or define
/// a kernel: (file, the top-level names reached there, what led there).
fn follow_imports(
    files: &mut Files,
    from: &str,
    imports: &BTreeSet<String>,
) -> Result<Vec<(String, BTreeSet<String>, String)>> {
    let mut found: Vec<(String, BTreeSet<String>, String)> = Vec::new();
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
        let Some((path, name)) = files.definition_of(&full)? else {
            continue;
        };
        if path == from {
            continue;
        }
        let file = files
            .get(&path)?
            .expect("definition_of returns parsed files");
        let (tops, more) = file.facts.reach(&[name.as_str()]);
        let relevant = file.facts.kernels.iter().any(|k| tops.contains(&k.name))
            || file.facts.launches.iter().any(|l| tops.contains(&l.top))
            || file.facts.tunings.iter().any(|t| tops.contains(&t.top));
        if !relevant {
            continue;
        }
        pending.extend(
            more.into_iter()
                .filter(|i| i.starts_with("tilegym."))
                .map(|i| (i, path.clone())),
        );
        match found.iter_mut().find(|(p, _, _)| *p == path) {
            Some((_, reached, _)) => reached.extend(tops),
            None => found.push((path, tops, format!("{via} uses {name}"))),
        }
    }
    Ok(found)
}

/// Inspects `kernel`'s file and the files its registered ops (or, without registrations, any of its
/// functions) reach. `capability` picks the autotune branches.
pub fn inspect(root: &Path, kernel: &Kernel, capability: Option<(u32, u32)>) -> Result<Report> {
    let mut files = Files {
        root,
        capability,
        parsed: BTreeMap::new(),
    };
    let main = files
        .get(&kernel.path)?
        .with_context(|| format!("{} does not exist", kernel.path))?;
    let facts = main.facts.clone();
    let path = main.path.clone();
    let mut report = Report {
        kernel: kernel.name.clone(),
        suite: kernel.suite.clone(),
        file: path.clone(),
        capability: capability.map(|(major, minor)| format!("{major}.{minor}")),
        kernels: located(&path, &facts.kernels, |_| true),
        launches: located(&path, &facts.launches, |_| true),
        registrations: Vec::new(),
        tunings: located(&path, &facts.tunings, |_| true),
        generators: located(&path, &facts.generators, |_| true),
        allowed_paths: vec![AllowedPath {
            path: path.clone(),
            reason: "the kernel file".to_string(),
        }],
        class: None,
    };
    let mut starts: Vec<&str> = facts
        .registrations
        .iter()
        .map(|r| top_name(&r.function))
        .collect();
    if starts.is_empty() {
        starts = facts.edges.keys().map(String::as_str).collect();
    }
    let (_, imports) = facts.reach(&starts);
    for (other, tops, reason) in follow_imports(&mut files, &path, &imports)? {
        let other_facts = &files.get(&other)?.expect("followed files are parsed").facts;
        report
            .launches
            .extend(located(&other, &other_facts.launches, |l| {
                tops.contains(&l.top)
            }));
        report
            .tunings
            .extend(located(&other, &other_facts.tunings, |t| {
                tops.contains(&t.top)
            }));
        report
            .kernels
            .extend(located(&other, &other_facts.kernels, |k| {
                tops.contains(&k.name)
            }));
        let generators: BTreeSet<&String> = other_facts
            .tunings
            .iter()
            .filter(|t| tops.contains(&t.top))
            .flat_map(|t| &t.generators)
            .collect();
        report
            .generators
            .extend(located(&other, &other_facts.generators, |g| {
                generators.contains(&g.name)
            }));
        report.allowed_paths.push(AllowedPath {
            path: other,
            reason,
        });
    }
    for registration in &facts.registrations {
        let (tops, imports) = facts.reach(&[top_name(&registration.function)]);
        let mut wrappers: Vec<String> = facts
            .launches
            .iter()
            .filter(|l| tops.contains(&l.top))
            .map(|l| format!("{path}:{} {}", l.line, l.wrapper))
            .collect();
        for (other, other_tops, _) in follow_imports(&mut files, &path, &imports)? {
            let other_facts = &files.get(&other)?.expect("followed files are parsed").facts;
            wrappers.extend(
                other_facts
                    .launches
                    .iter()
                    .filter(|l| other_tops.contains(&l.top))
                    .map(|l| format!("{other}:{} {}", l.line, l.wrapper)),
            );
        }
        report.registrations.push(RegistrationReport {
            file: path.clone(),
            registration: registration.clone(),
            wrappers,
        });
    }
    report.class = estimate_class(&facts.kernels);
    for launch in &mut report.launches {
        launch.item.kernels = confirmed_kernels(&mut files, &launch.item.kernels)?;
    }
    for tuning in &mut report.tunings {
        tuning.item.kernels = confirmed_kernels(&mut files, &tuning.item.kernels)?;
    }
    Ok(report)
}

/// Keeps local kernel names, and imported names whose module defines them as kernels.
fn confirmed_kernels(files: &mut Files, names: &[String]) -> Result<Vec<String>> {
    let mut kept = Vec::new();
    for name in names {
        let confirmed = match name.contains('.') {
            false => true,
            true => match files.definition_of(name)? {
                Some((path, local)) => files
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

fn located<T: Clone>(file: &str, items: &[T], keep: impl Fn(&T) -> bool) -> Vec<Located<T>> {
    items
        .iter()
        .filter(|item| keep(item))
        .map(|item| Located {
            file: file.to_string(),
            item: item.clone(),
        })
        .collect()
}

fn top_name(qname: &str) -> &str {
    qname.split('.').next().unwrap_or(qname)
}

/// A class read from the source: a kernel with a matrix multiply-accumulate is taken as compute-bound
/// (GEMM and attention reach tens to hundreds of FLOP per byte), one without as memory-bound
/// (elementwise ops, norms and reductions do about one FLOP per byte). Balanced cases need a measurement.
pub fn estimate_class(kernels: &[KernelDef]) -> Option<ClassEstimate> {
    if kernels.is_empty() {
        return None;
    }
    let with_mma: Vec<&str> = kernels
        .iter()
        .filter(|k| k.mma)
        .map(|k| k.name.as_str())
        .collect();
    let dtypes: BTreeSet<&str> = kernels
        .iter()
        .flat_map(|k| k.dtypes.iter().map(String::as_str))
        .collect();
    let dtypes = if dtypes.is_empty() {
        String::new()
    } else {
        format!(
            "; dtypes named: {}",
            dtypes.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    Some(if with_mma.is_empty() {
        ClassEstimate {
            class: KernelClass::Memory,
            source: "static",
            reason: format!(
                "no ct.mma in its {} kernel(s): elementwise/reduction work, about 1 FLOP per byte{dtypes}",
                kernels.len()
            ),
        }
    } else {
        ClassEstimate {
            class: KernelClass::Compute,
            source: "static",
            reason: format!(
                "ct.mma in {}: matrix tiles, tens to hundreds of FLOP per byte{dtypes}",
                with_mma.join(", ")
            ),
        }
    })
}
