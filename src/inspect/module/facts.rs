//! What the inspector reports of one file: plain values, serialized as `inspect --json` shows them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opt {
    pub name: String,
    pub value: String,
}

/// `name=value`, as written.
impl std::fmt::Display for Opt {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{}={}", self.name, self.value)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelDef {
    pub name: String,
    pub line: usize,
    /// The decorator's (or `ct.kernel(...)` call's) keyword arguments, as written.
    pub options: Vec<Opt>,
    /// `ct.mma`/`ct.matmul`/`@` in the kernel or the helpers it calls.
    pub mma: bool,
    /// `shape=` arguments of its loads and stores, as written.
    pub tile_shapes: Vec<String>,
    /// cuTile dtypes it names.
    pub dtypes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Launch {
    pub line: usize,
    /// The enclosing function (`Class.method`, `outer.inner`), or `<module>`.
    pub wrapper: String,
    /// The kernel argument as written.
    pub kernel_expr: String,
    /// The kernels it can be, aliases resolved: local names, or `module.name` for imported ones.
    pub kernels: Vec<String>,
    /// The grid argument as written.
    pub grid: String,
    /// What a grid variable was last set to before the launch (`(min(NUM_SMS, tiles),)`).
    pub grid_value: Option<String>,
    #[serde(skip)]
    pub top: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registration {
    pub line: usize,
    pub op: String,
    pub backend: Option<String>,
    pub function: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TuningCall {
    pub line: usize,
    pub function: String,
    /// The search space argument as written.
    pub space: String,
    /// Functions of this file that build the space.
    pub generators: Vec<String>,
    pub kernels: Vec<String>,
    #[serde(skip)]
    pub top: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArchBranch {
    pub line: usize,
    /// The condition as written, or `else`.
    pub condition: String,
    /// Whether the given GPU takes it; `null` when no capability was given or it cannot be told.
    pub taken: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigSite {
    pub line: usize,
    /// `FIELD=value, ...` as written.
    pub fields: String,
    /// How many configs it yields: the product of the literal lists of the loops around it.
    pub count: Option<u64>,
    /// Index into the generator's branches of the innermost GPU-architecture branch around it.
    pub branch: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigGenerator {
    pub name: String,
    pub line: usize,
    pub fields: Vec<String>,
    pub branches: Vec<ArchBranch>,
    pub configs: Vec<ConfigSite>,
}

/// Everything the inspector learns from one file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ModuleFacts {
    pub kernels: Vec<KernelDef>,
    pub launches: Vec<Launch>,
    pub registrations: Vec<Registration>,
    pub tunings: Vec<TuningCall>,
    pub generators: Vec<ConfigGenerator>,
    /// Top-level name -> the top-level names its definition mentions.
    #[serde(skip)]
    pub edges: BTreeMap<String, BTreeSet<String>>,
    /// Top-level name -> the imported names (canonical, dotted) its definition mentions.
    #[serde(skip)]
    pub imports_used: BTreeMap<String, BTreeSet<String>>,
}

impl ModuleFacts {
    /// The top-level names reachable from `starts` by mentions, and the imports they mention.
    pub fn reach(&self, starts: &[&str]) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut imports = BTreeSet::new();
        let mut pending: Vec<String> = starts.iter().map(|s| s.to_string()).collect();
        while let Some(name) = pending.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            imports.extend(self.imports_used.get(&name).into_iter().flatten().cloned());
            pending.extend(self.edges.get(&name).into_iter().flatten().cloned());
        }
        (seen, imports)
    }
}
