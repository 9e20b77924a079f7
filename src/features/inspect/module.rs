//! What one Python file holds for cuTile: kernels, launch sites, registrations, tuning calls and the
//! config generators they use, with local aliases of kernels resolved.
//!
//! Names are resolved the way Python would find them, approximately: a name assigned in a function is
//! that function's (every assignment counts, so a kernel picked in an if/else yields both); a
//! parameter takes what the function's callers in this file pass; other names come from the enclosing
//! function, then the module (its assignments, including `cache[key] = value` anywhere), its
//! functions (through their `return`s) and its imports. A result may hold more than one kernel.

mod calls;
mod definitions;
mod generator;
mod kernels;
mod mentions;
mod resolve;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use tree_sitter::Node;

use super::syntax::{Source, SyntaxError, descendants, named_children};

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

/// The canonical dotted names of the cuTile API the inspector looks for.
const TILE: &str = "cuda.tile";
const KERNEL: &str = "cuda.tile.kernel";

/// Parses and inspects one file. `package` is the file's dotted package (`tilegym.ops.cutile`), for
/// relative imports.
pub fn analyze(
    text: &str,
    package: &str,
    capability: Option<(u32, u32)>,
) -> Result<ModuleFacts, SyntaxError> {
    let source = Source::parse(text)?;
    let module = Module::new(&source, package);
    Ok(module.facts(capability))
}

/// A function definition (methods and nested functions included).
struct Func<'t> {
    name: String,
    qname: String,
    node: Node<'t>,
    parent: Option<usize>,
    params: Vec<String>,
    /// The first parameter is `self`/`cls`: attribute calls pass one argument fewer.
    method: bool,
}

struct Assign<'t> {
    func: Option<usize>,
    name: String,
    value: Node<'t>,
    /// `name[key] = value`: stores into the object, does not rebind the name.
    into_subscript: bool,
}

struct Module<'t> {
    source: &'t Source,
    /// Local name -> canonical dotted name, from the imports.
    aliases: HashMap<String, String>,
    funcs: Vec<Func<'t>>,
    func_of_node: HashMap<usize, usize>,
    /// Top-level definitions: name -> node (functions and classes).
    tops: BTreeMap<String, Node<'t>>,
    assigns: Vec<Assign<'t>>,
    kernels: Vec<KernelDef>,
    kernel_nodes: BTreeMap<String, Node<'t>>,
    calls: Vec<Node<'t>>,
}

impl<'t> Module<'t> {
    fn new(source: &'t Source, package: &str) -> Module<'t> {
        let mut module = Module {
            source,
            aliases: HashMap::new(),
            funcs: Vec::new(),
            func_of_node: HashMap::new(),
            tops: BTreeMap::new(),
            assigns: Vec::new(),
            kernels: Vec::new(),
            kernel_nodes: BTreeMap::new(),
            calls: Vec::new(),
        };
        let nodes = descendants(source.root());
        for node in &nodes {
            match node.kind() {
                "import_statement" | "import_from_statement" => module.import(*node, package),
                _ => {}
            }
        }
        module.collect_functions(source.root(), None, "");
        for top in named_children(source.root()) {
            let def = if top.kind() == "decorated_definition" {
                top.child_by_field_name("definition")
            } else {
                Some(top)
            };
            if let Some(def) =
                def.filter(|d| matches!(d.kind(), "function_definition" | "class_definition"))
                && let Some(name) = def.child_by_field_name("name")
            {
                module.tops.insert(source.text_of(name).to_string(), top);
            }
        }
        for node in &nodes {
            match node.kind() {
                // `for name in items` binds name to each item: resolved as if assigned all of them
                "assignment" | "for_statement" => module.assignment(*node),
                "call" => module.calls.push(*node),
                _ => {}
            }
        }
        module.collect_kernels();
        module
    }

    fn canonical(&self, dotted: &str) -> String {
        let (head, rest) = dotted.split_once('.').map_or((dotted, ""), |(h, r)| (h, r));
        match self.aliases.get(head) {
            Some(full) if rest.is_empty() => full.clone(),
            Some(full) => format!("{full}.{rest}"),
            None => dotted.to_string(),
        }
    }

    fn callee(&self, call: Node) -> Option<String> {
        let function = call.child_by_field_name("function")?;
        Some(self.canonical(&self.source.dotted(function)?))
    }

    /// The innermost function around `node`.
    fn func_around(&self, node: Node) -> Option<usize> {
        let mut current = node.parent();
        while let Some(n) = current {
            if let Some(index) = self.func_of_node.get(&n.id()) {
                return Some(*index);
            }
            current = n.parent();
        }
        None
    }

    /// The top-level definition around `node`, or `<module>`.
    fn top_around(&self, node: Node) -> String {
        let mut current = Some(node);
        let mut top = None;
        while let Some(n) = current {
            if n.parent().is_some_and(|p| p.kind() == "module") {
                top = Some(n);
            }
            current = n.parent();
        }
        top.and_then(|t| {
            self.tops
                .iter()
                .find(|(_, node)| **node == t)
                .map(|(name, _)| name.clone())
        })
        .unwrap_or_else(|| "<module>".to_string())
    }

    fn facts(&self, capability: Option<(u32, u32)>) -> ModuleFacts {
        let (mut tunings, generator_funcs) = self.tunings();
        let generators = self.generators(generator_funcs, &mut tunings, capability);
        let (edges, imports_used) = self.mentions();
        ModuleFacts {
            kernels: self.kernels.clone(),
            launches: self.launches(),
            registrations: self.registrations(),
            tunings,
            generators,
            edges,
            imports_used,
        }
    }
}

/// The expressions of a definition's decorators (`ct.kernel`, `register_impl("op", ...)`).
fn decorators(def: Node) -> Vec<Node> {
    let Some(decorated) = def.parent().filter(|p| p.kind() == "decorated_definition") else {
        return Vec::new();
    };
    named_children(decorated)
        .into_iter()
        .filter(|n| n.kind() == "decorator")
        .filter_map(|d| named_children(d).into_iter().next())
        .collect()
}
