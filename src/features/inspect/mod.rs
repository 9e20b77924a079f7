//! Setup that understands the kernel: what a kernel file and the files its registered ops reach hold
//! for cuTile (kernels, launch wrappers, registrations, autotune spaces), the paths a session may
//! change, and a static estimate of the kernel's class. Pure apart from reading files: source text in,
//! report out; nothing is imported or run.

pub mod arch;
mod class;
pub mod coverage;
pub mod derived_inputs;
mod files;
pub mod module;
pub mod perf_file;
pub mod recorded_calls;
pub mod report;
pub mod source;
pub mod syntax;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

pub use class::estimate_class;
use files::{Files, Followed};
use module::{ConfigGenerator, KernelDef, Launch, ModuleFacts, Registration, TuningCall};

use crate::features::locate::Kernel;
use crate::rules::kernel_class::KernelClass;

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

/// Inspects `kernel`'s file and the files its registered ops (or, without registrations, any of its
/// functions) reach. `capability` picks the autotune branches.
pub fn inspect(root: &Path, kernel: &Kernel, capability: Option<(u32, u32)>) -> Result<Report> {
    let mut files = Files::new(root, capability);
    let main = files
        .get(&kernel.path)?
        .with_context(|| format!("{} does not exist", kernel.path))?;
    let facts = main.facts.clone();
    let path = main.path.clone();
    let mut report = Report::of_kernel_file(kernel, &path, &facts, capability);
    let mut starts: Vec<&str> = facts
        .registrations
        .iter()
        .map(|r| top_name(&r.function))
        .collect();
    if starts.is_empty() {
        starts = facts.edges.keys().map(String::as_str).collect();
    }
    let (_, imports) = facts.reach(&starts);
    for followed in files.follow_imports(&path, &imports)? {
        report.add_followed(files.parsed(&followed.path), followed);
    }
    for registration in &facts.registrations {
        let wrappers = registration_wrappers(&mut files, &path, &facts, registration)?;
        report.registrations.push(RegistrationReport {
            file: path.clone(),
            registration: registration.clone(),
            wrappers,
        });
    }
    report.class = estimate_class(&facts.kernels);
    for launch in &mut report.launches {
        launch.item.kernels = files.confirmed_kernels(&launch.item.kernels)?;
    }
    for tuning in &mut report.tunings {
        tuning.item.kernels = files.confirmed_kernels(&tuning.item.kernels)?;
    }
    Ok(report)
}

impl Report {
    /// What the kernel's own file holds, before anything is followed from it.
    fn of_kernel_file(
        kernel: &Kernel,
        path: &str,
        facts: &ModuleFacts,
        capability: Option<(u32, u32)>,
    ) -> Report {
        Report {
            kernel: kernel.name.clone(),
            suite: kernel.suite.clone(),
            file: path.to_string(),
            capability: capability.map(|(major, minor)| format!("{major}.{minor}")),
            kernels: located(path, &facts.kernels, |_| true),
            launches: located(path, &facts.launches, |_| true),
            registrations: Vec::new(),
            tunings: located(path, &facts.tunings, |_| true),
            generators: located(path, &facts.generators, |_| true),
            allowed_paths: vec![AllowedPath {
                path: path.to_string(),
                reason: "the kernel file".to_string(),
            }],
            class: None,
        }
    }

    /// Adds what a followed file holds for the names reached there, and allows the file.
    fn add_followed(&mut self, facts: &ModuleFacts, followed: Followed) {
        let Followed { path, tops, reason } = followed;
        let reached = |top: &String| tops.contains(top);
        self.launches
            .extend(located(&path, &facts.launches, |l| reached(&l.top)));
        self.tunings
            .extend(located(&path, &facts.tunings, |t| reached(&t.top)));
        self.kernels
            .extend(located(&path, &facts.kernels, |k| reached(&k.name)));
        let generators: BTreeSet<&String> = facts
            .tunings
            .iter()
            .filter(|t| reached(&t.top))
            .flat_map(|t| &t.generators)
            .collect();
        self.generators
            .extend(located(&path, &facts.generators, |g| {
                generators.contains(&g.name)
            }));
        self.allowed_paths.push(AllowedPath { path, reason });
    }
}

/// The launch wrappers `registration` reaches through calls, in its file and the files its imports
/// lead to, as `file:line wrapper`.
fn registration_wrappers(
    files: &mut Files,
    path: &str,
    facts: &ModuleFacts,
    registration: &Registration,
) -> Result<Vec<String>> {
    let (tops, imports) = facts.reach(&[top_name(&registration.function)]);
    let mut wrappers = launch_wrappers(path, facts, &tops);
    for followed in files.follow_imports(path, &imports)? {
        wrappers.extend(launch_wrappers(
            &followed.path,
            files.parsed(&followed.path),
            &followed.tops,
        ));
    }
    Ok(wrappers)
}

/// The wrappers of the launches in `file` under the top-level names `tops`, as `file:line wrapper`.
fn launch_wrappers(file: &str, facts: &ModuleFacts, tops: &BTreeSet<String>) -> Vec<String> {
    facts
        .launches
        .iter()
        .filter(|l| tops.contains(&l.top))
        .map(|l| format!("{file}:{} {}", l.line, l.wrapper))
        .collect()
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
