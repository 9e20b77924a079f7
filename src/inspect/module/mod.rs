//! What one Python file holds for cuTile: kernels, launch sites, registrations, tuning calls and the
//! config generators they use, with local aliases of kernels resolved.
//!
//! Names are resolved the way Python would find them, approximately: a name assigned in a function is
//! that function's (every assignment counts, so a kernel picked in an if/else yields both); a
//! parameter takes what the function's callers in this file pass; other names come from the enclosing
//! function, then the module (its assignments, including `cache[key] = value` anywhere), its
//! functions (through their `return`s) and its imports. A result may hold more than one kernel.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use tree_sitter::Node;

use super::arch::{self, CapVar};
use super::syntax::{Arguments, Source, SyntaxError, descendants, line, named_children};

/// The canonical dotted names of the cuTile API the inspector looks for.
const TILE: &str = "cuda.tile";
const KERNEL: &str = "cuda.tile.kernel";
const LAUNCH: &str = "cuda.tile.launch";
const EXHAUSTIVE_SEARCH: &str = "cuda.tile.tune.exhaustive_search";
const MMA: [&str; 2] = ["cuda.tile.mma", "cuda.tile.matmul"];
const REGISTER_IMPL: &str = "register_impl";
/// Calls that build one autotune config from keyword arguments.
const CONFIG_BUILDERS: [&str; 3] = ["SimpleNamespace", "Config", "dict"];
const DTYPES: [&str; 14] = [
    "float16",
    "bfloat16",
    "float32",
    "tfloat32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e8m0fnu",
    "float4_e2m1fn",
    "int8",
    "int16",
    "int32",
    "int64",
    "bool_",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Opt {
    pub name: String,
    pub value: String,
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

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Sym {
    Kernel(String),
    Function(usize),
    Imported(String),
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

    fn import(&mut self, node: Node, package: &str) {
        let s = self.source;
        if node.kind() == "import_statement" {
            for name in named_children(node) {
                match name.kind() {
                    // `import cuda.tile` binds `cuda`, which already reads canonically
                    "dotted_name" => {}
                    "aliased_import" => {
                        if let (Some(n), Some(a)) = (
                            name.child_by_field_name("name"),
                            name.child_by_field_name("alias"),
                        ) {
                            self.aliases
                                .insert(s.text_of(a).to_string(), s.text_of(n).to_string());
                        }
                    }
                    _ => {}
                }
            }
            return;
        }
        let Some(module_node) = node.child_by_field_name("module_name") else {
            return;
        };
        let module = absolute_module(s.text_of(module_node), package);
        let mut cursor = node.walk();
        for name in node.children_by_field_name("name", &mut cursor) {
            let (imported, local) = match name.kind() {
                "aliased_import" => match (
                    name.child_by_field_name("name"),
                    name.child_by_field_name("alias"),
                ) {
                    (Some(n), Some(a)) => (s.text_of(n), s.text_of(a)),
                    _ => continue,
                },
                _ => (s.text_of(name), s.text_of(name)),
            };
            self.aliases
                .insert(local.to_string(), format!("{module}.{imported}"));
        }
    }

    fn collect_functions(&mut self, node: Node<'t>, parent: Option<usize>, prefix: &str) {
        for child in named_children(node) {
            let (def, inner) = match child.kind() {
                "decorated_definition" => match child.child_by_field_name("definition") {
                    Some(d) => (d, d),
                    None => continue,
                },
                "function_definition" | "class_definition" => (child, child),
                _ => {
                    self.collect_functions(child, parent, prefix);
                    continue;
                }
            };
            let Some(name_node) = def.child_by_field_name("name") else {
                continue;
            };
            let name = self.source.text_of(name_node).to_string();
            let qname = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            if def.kind() == "class_definition" {
                self.collect_functions(inner, parent, &qname);
                continue;
            }
            let params: Vec<String> = def
                .child_by_field_name("parameters")
                .map(|p| {
                    named_children(p)
                        .into_iter()
                        .filter_map(|p| self.param_name(p))
                        .collect()
                })
                .unwrap_or_default();
            let method = prefix_is_class(prefix, parent, &self.funcs)
                && matches!(params.first().map(String::as_str), Some("self" | "cls"));
            self.funcs.push(Func {
                name,
                qname: qname.clone(),
                node: def,
                parent,
                params,
                method,
            });
            let index = self.funcs.len() - 1;
            self.func_of_node.insert(def.id(), index);
            if let Some(body) = def.child_by_field_name("body") {
                self.collect_functions(body, Some(index), &qname);
            }
        }
    }

    fn param_name(&self, param: Node) -> Option<String> {
        let node = match param.kind() {
            "identifier" => param,
            "typed_parameter" => named_children(param)
                .into_iter()
                .find(|n| n.kind() == "identifier")?,
            _ => param.child_by_field_name("name")?,
        };
        (node.kind() == "identifier").then(|| self.source.text_of(node).to_string())
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

    fn assignment(&mut self, node: Node<'t>) {
        let (Some(left), Some(value)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        let func = self.func_around(node);
        let mut targets = Vec::new();
        match left.kind() {
            "identifier" => targets.push((self.source.text_of(left).to_string(), false)),
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                for n in descendants(left)
                    .into_iter()
                    .filter(|n| n.kind() == "identifier")
                {
                    targets.push((self.source.text_of(n).to_string(), false));
                }
            }
            "subscript" => {
                if let Some(name) = left
                    .child_by_field_name("value")
                    .and_then(|v| self.source.dotted(v))
                    && !name.contains('.')
                {
                    targets.push((name, true));
                }
            }
            _ => {}
        }
        for (name, into_subscript) in targets {
            self.assigns.push(Assign {
                func,
                name,
                value,
                into_subscript,
            });
        }
    }

    fn collect_kernels(&mut self) {
        for func in &self.funcs {
            for expr in decorators(func.node) {
                let (target, call) = if expr.kind() == "call" {
                    (expr.child_by_field_name("function"), Some(expr))
                } else {
                    (Some(expr), None)
                };
                let is_kernel = target
                    .and_then(|t| self.source.dotted(t))
                    .is_some_and(|d| self.canonical(&d) == KERNEL);
                if is_kernel {
                    let options = call.map(|c| self.options(c)).unwrap_or_default();
                    self.kernel_nodes.insert(func.name.clone(), func.node);
                    self.kernels.push(KernelDef {
                        name: func.name.clone(),
                        line: line(func.node),
                        options,
                        mma: false,
                        tile_shapes: Vec::new(),
                        dtypes: Vec::new(),
                    });
                }
            }
        }
        // `name = ct.kernel(function, hint=...)` at module level
        for assign in self
            .assigns
            .iter()
            .filter(|a| a.func.is_none() && !a.into_subscript)
        {
            if assign.value.kind() == "call" && self.callee(assign.value).as_deref() == Some(KERNEL)
            {
                let wrapped = Arguments::of(self.source, assign.value)
                    .positional
                    .first()
                    .and_then(|f| self.tops.get(self.source.text_of(*f)).copied());
                if let Some(node) = wrapped {
                    self.kernel_nodes.insert(assign.name.clone(), node);
                }
                self.kernels.push(KernelDef {
                    name: assign.name.clone(),
                    line: line(assign.value),
                    options: self.options(assign.value),
                    mma: false,
                    tile_shapes: Vec::new(),
                    dtypes: Vec::new(),
                });
            }
        }
        let facts: Vec<(bool, Vec<String>, Vec<String>)> = self
            .kernels
            .iter()
            .map(|k| self.kernel_body_facts(&k.name))
            .collect();
        for (kernel, (mma, shapes, dtypes)) in self.kernels.iter_mut().zip(facts) {
            kernel.mma = mma;
            kernel.tile_shapes = shapes;
            kernel.dtypes = dtypes;
        }
    }

    fn options(&self, call: Node) -> Vec<Opt> {
        Arguments::of(self.source, call)
            .keywords
            .into_iter()
            .map(|(name, value)| Opt {
                name,
                value: self.source.flat_text(value),
            })
            .collect()
    }

    /// MMA, tile shapes and dtypes of a kernel and the helpers of this file it calls.
    fn kernel_body_facts(&self, kernel: &str) -> (bool, Vec<String>, Vec<String>) {
        let Some(start) = self.kernel_nodes.get(kernel) else {
            return (false, Vec::new(), Vec::new());
        };
        let mut bodies = vec![*start];
        let mut seen = HashSet::from([start.id()]);
        let mut mma = false;
        let mut shapes = BTreeSet::new();
        let mut dtypes = BTreeSet::new();
        while let Some(body) = bodies.pop() {
            for node in descendants(body) {
                match node.kind() {
                    "call" => {
                        let callee = self.callee(node).unwrap_or_default();
                        if MMA.contains(&callee.as_str()) {
                            mma = true;
                        }
                        if callee.starts_with(TILE)
                            && let Some(shape) = Arguments::of(self.source, node).keyword("shape")
                        {
                            shapes.insert(self.source.flat_text(shape));
                        }
                    }
                    "binary_operator" => {
                        if node
                            .child_by_field_name("operator")
                            .is_some_and(|op| self.source.text_of(op) == "@")
                        {
                            mma = true;
                        }
                    }
                    "attribute" => {
                        let name = self.source.dotted(node).map(|d| self.canonical(&d));
                        if let Some(dtype) =
                            name.as_deref().and_then(|n| n.strip_prefix("cuda.tile."))
                            && DTYPES.contains(&dtype)
                        {
                            dtypes.insert(dtype.to_string());
                        }
                    }
                    "identifier" => {
                        if let Some(helper) = self.tops.get(self.source.text_of(node))
                            && helper.kind() != "class_definition"
                            && seen.insert(helper.id())
                        {
                            bodies.push(*helper);
                        }
                    }
                    _ => {}
                }
            }
        }
        (
            mma,
            shapes.into_iter().collect(),
            dtypes.into_iter().collect(),
        )
    }

    fn facts(&self, capability: Option<(u32, u32)>) -> ModuleFacts {
        let mut facts = ModuleFacts {
            kernels: self.kernels.clone(),
            ..ModuleFacts::default()
        };
        let mut generator_funcs = BTreeSet::new();
        for call in &self.calls {
            let Some(callee) = self.callee(*call) else {
                continue;
            };
            let func = self.func_around(*call);
            let args = Arguments::of(self.source, *call);
            let function = func.map_or("<module>".to_string(), |f| self.funcs[f].qname.clone());
            if callee == LAUNCH {
                let Some(kernel) = args.get(2, "kernel") else {
                    continue;
                };
                facts.launches.push(Launch {
                    line: line(*call),
                    wrapper: function,
                    kernel_expr: self.source.flat_text(kernel),
                    kernels: self.kernel_names(&self.resolve(kernel, func)),
                    grid: args
                        .get(1, "grid")
                        .map(|g| self.source.flat_text(g))
                        .unwrap_or_default(),
                    grid_value: args.get(1, "grid").and_then(|g| self.latest_value(g, func)),
                    top: self.top_around(*call),
                });
            } else if callee == EXHAUSTIVE_SEARCH {
                let space = args.get(0, "search_space");
                let generators: Vec<usize> = space
                    .map(|s| self.resolve(s, func))
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|sym| match sym {
                        Sym::Function(f) => Some(f),
                        _ => None,
                    })
                    .collect();
                generator_funcs.extend(generators.iter().copied());
                facts.tunings.push(TuningCall {
                    line: line(*call),
                    function,
                    space: space
                        .map(|s| shorten(&self.source.flat_text(s)))
                        .unwrap_or_default(),
                    generators: generators
                        .iter()
                        .map(|g| self.funcs[*g].qname.clone())
                        .collect(),
                    kernels: args
                        .get(3, "kernel")
                        .map(|k| self.kernel_names(&self.resolve(k, func)))
                        .unwrap_or_default(),
                    top: self.top_around(*call),
                });
            }
        }
        for func in &self.funcs {
            for call in decorators(func.node)
                .into_iter()
                .filter(|e| e.kind() == "call")
            {
                if !self
                    .callee(call)
                    .is_some_and(|c| c.rsplit('.').next() == Some(REGISTER_IMPL))
                {
                    continue;
                }
                let args = Arguments::of(self.source, call);
                facts.registrations.push(Registration {
                    line: line(call),
                    op: args
                        .get(0, "name")
                        .map(|n| self.string_value(n))
                        .unwrap_or_default(),
                    backend: args.get(1, "backend").map(|b| self.string_value(b)),
                    function: func.qname.clone(),
                });
            }
        }
        for f in generator_funcs {
            let generator = self.generator(f, capability);
            if generator.configs.is_empty() {
                // a helper the space mentions (a flag, a size), not a builder of configs
                facts
                    .tunings
                    .iter_mut()
                    .for_each(|t| t.generators.retain(|g| *g != generator.name));
            } else {
                facts.generators.push(generator);
            }
        }
        // module-level names: definitions, and assignments such as `apply = _Function.apply`
        let mut top_nodes: Vec<(&str, Node)> = self
            .tops
            .iter()
            .map(|(name, node)| (name.as_str(), *node))
            .collect();
        top_nodes.extend(
            self.assigns
                .iter()
                .filter(|a| a.func.is_none() && !a.into_subscript)
                .map(|a| (a.name.as_str(), a.value)),
        );
        let names: BTreeSet<&str> = top_nodes.iter().map(|(name, _)| *name).collect();
        for (name, node) in top_nodes {
            for n in descendants(node)
                .into_iter()
                .filter(|n| n.kind() == "identifier")
            {
                let text = self.source.text_of(n);
                if text != name && names.contains(text) {
                    facts
                        .edges
                        .entry(name.to_string())
                        .or_default()
                        .insert(text.to_string());
                } else if let Some(full) = self.aliases.get(text) {
                    facts
                        .imports_used
                        .entry(name.to_string())
                        .or_default()
                        .insert(full.clone());
                }
            }
        }
        facts
    }

    /// The value last assigned, before `node`, to the variable `node` names in its function, as written.
    fn latest_value(&self, node: Node, func: Option<usize>) -> Option<String> {
        if node.kind() != "identifier" {
            return None;
        }
        let name = self.source.text_of(node);
        self.assigns
            .iter()
            .filter(|a| a.func == func && a.name == name && !a.into_subscript)
            .filter(|a| a.value.parent().is_some_and(|p| p.kind() == "assignment"))
            .filter(|a| a.value.end_byte() < node.start_byte())
            .max_by_key(|a| a.value.start_byte())
            .map(|a| self.source.flat_text(a.value))
    }

    fn string_value(&self, node: Node) -> String {
        let text = self.source.text_of(node);
        if node.kind() == "string" {
            named_children(node)
                .into_iter()
                .filter(|n| n.kind() == "string_content")
                .map(|n| self.source.text_of(n))
                .collect()
        } else {
            text.to_string()
        }
    }

    fn kernel_names(&self, syms: &BTreeSet<Sym>) -> Vec<String> {
        syms.iter()
            .filter_map(|sym| match sym {
                Sym::Kernel(name) => Some(name.clone()),
                Sym::Imported(full) if !full.starts_with(TILE) => Some(full.clone()),
                _ => None,
            })
            .collect()
    }

    fn resolve(&self, expr: Node, func: Option<usize>) -> BTreeSet<Sym> {
        let mut out = BTreeSet::new();
        self.resolve_into(expr, func, &mut HashSet::new(), &mut out);
        out
    }

    fn resolve_into(
        &self,
        expr: Node,
        func: Option<usize>,
        seen: &mut HashSet<(Option<usize>, String)>,
        out: &mut BTreeSet<Sym>,
    ) {
        for node in descendants(expr) {
            if node.kind() != "identifier" || !is_reference(node) {
                continue;
            }
            self.resolve_name(self.source.text_of(node), func, seen, out);
        }
    }

    fn resolve_name(
        &self,
        name: &str,
        func: Option<usize>,
        seen: &mut HashSet<(Option<usize>, String)>,
        out: &mut BTreeSet<Sym>,
    ) {
        if !seen.insert((func, name.to_string())) {
            return;
        }
        let Some(f) = func else {
            return self.resolve_global(name, seen, out);
        };
        let local: Vec<&Assign> = self
            .assigns
            .iter()
            .filter(|a| a.func == Some(f) && a.name == name)
            .collect();
        if local.iter().any(|a| !a.into_subscript) {
            for assign in local {
                self.resolve_into(assign.value, Some(f), seen, out);
            }
            return;
        }
        if let Some(index) = self.funcs[f].params.iter().position(|p| p == name) {
            self.resolve_argument(f, index, name, seen, out);
            return;
        }
        self.resolve_name(name, self.funcs[f].parent, seen, out);
    }

    fn resolve_global(
        &self,
        name: &str,
        seen: &mut HashSet<(Option<usize>, String)>,
        out: &mut BTreeSet<Sym>,
    ) {
        if self.kernels.iter().any(|k| k.name == name) {
            out.insert(Sym::Kernel(name.to_string()));
            return;
        }
        if let Some(f) = self
            .funcs
            .iter()
            .position(|f| f.parent.is_none() && f.name == name && !f.qname.contains('.'))
        {
            out.insert(Sym::Function(f));
            for ret in descendants(self.funcs[f].node)
                .into_iter()
                .filter(|n| n.kind() == "return_statement")
            {
                if self.func_around(ret) == Some(f) {
                    self.resolve_into(ret, Some(f), seen, out);
                }
            }
            return;
        }
        let mut assigned = false;
        for assign in self
            .assigns
            .iter()
            .filter(|a| a.name == name && (a.func.is_none() || a.into_subscript))
        {
            assigned = true;
            self.resolve_into(assign.value, assign.func, seen, out);
        }
        if !assigned && let Some(full) = self.aliases.get(name) {
            out.insert(Sym::Imported(full.clone()));
        }
    }

    /// What the callers of function `f` in this file pass as its parameter number `index`.
    fn resolve_argument(
        &self,
        f: usize,
        index: usize,
        name: &str,
        seen: &mut HashSet<(Option<usize>, String)>,
        out: &mut BTreeSet<Sym>,
    ) {
        let func = &self.funcs[f];
        for call in &self.calls {
            let Some(callee) = call.child_by_field_name("function") else {
                continue;
            };
            let called = match callee.kind() {
                "identifier" => self.source.text_of(callee) == func.name,
                "attribute" => callee
                    .child_by_field_name("attribute")
                    .is_some_and(|a| self.source.text_of(a) == func.name),
                _ => false,
            };
            if !called {
                continue;
            }
            let shift = usize::from(func.method && callee.kind() == "attribute");
            let Some(position) = index.checked_sub(shift) else {
                continue;
            };
            if let Some(arg) = Arguments::of(self.source, *call).get(position, name) {
                self.resolve_into(arg, self.func_around(*call), seen, out);
            }
        }
    }

    fn generator(&self, f: usize, capability: Option<(u32, u32)>) -> ConfigGenerator {
        let func = &self.funcs[f];
        let nodes: Vec<Node> = descendants(func.node);
        let mut vars = BTreeMap::new();
        for assign in self
            .assigns
            .iter()
            .filter(|a| a.func == Some(f) && !a.into_subscript)
        {
            if descendants(assign.value)
                .into_iter()
                .any(|n| arch::is_capability_call(self.source, n))
            {
                let left = assign
                    .value
                    .parent()
                    .and_then(|p| p.child_by_field_name("left"));
                let var = match left.map(|l| l.kind()) {
                    Some("identifier") => CapVar::Whole,
                    Some(_) => {
                        let position = left
                            .map(|l| {
                                named_children(l)
                                    .iter()
                                    .position(|n| self.source.text_of(*n) == assign.name)
                            })
                            .unwrap_or_default();
                        if position == Some(0) {
                            CapVar::Major
                        } else {
                            CapVar::Minor
                        }
                    }
                    None => continue,
                };
                vars.insert(assign.name.clone(), var);
            }
        }
        // an arch branch: (block node, branch)
        let mut blocks: Vec<(Node, ArchBranch)> = Vec::new();
        for node in nodes.iter().filter(|n| n.kind() == "if_statement") {
            let Some(condition) = node.child_by_field_name("condition") else {
                continue;
            };
            if !arch::mentions_capability(self.source, condition, &vars) {
                continue;
            }
            let mut arms: Vec<(Option<Node>, Option<Node>, Node)> = vec![(
                Some(condition),
                node.child_by_field_name("consequence"),
                *node,
            )];
            let mut cursor = node.walk();
            for alternative in node.children_by_field_name("alternative", &mut cursor) {
                match alternative.kind() {
                    "elif_clause" => arms.push((
                        alternative.child_by_field_name("condition"),
                        alternative.child_by_field_name("consequence"),
                        alternative,
                    )),
                    _ => arms.push((None, alternative.child_by_field_name("body"), alternative)),
                }
            }
            let mut decided = Some(false);
            for (condition, body, at) in arms {
                let value = match (condition, capability) {
                    (Some(c), Some(cc)) => arch::evaluate(self.source, c, &vars, cc),
                    (None, Some(_)) => Some(true),
                    (_, None) => None,
                };
                let taken = match (decided, value) {
                    (Some(true), _) => Some(false),
                    (Some(false), v) => v,
                    (None, _) => None,
                };
                decided = match (decided, value) {
                    (Some(true), _) => Some(true),
                    (Some(false), v) => v,
                    _ => None,
                };
                if let Some(body) = body {
                    blocks.push((
                        body,
                        ArchBranch {
                            line: line(at),
                            condition: condition
                                .map_or("else".to_string(), |c| self.source.flat_text(c)),
                            taken,
                        },
                    ));
                }
            }
        }
        let mut configs = Vec::new();
        let mut fields = BTreeSet::new();
        for call in nodes.iter().filter(|n| n.kind() == "call") {
            let builder = self.callee(*call).unwrap_or_default();
            if !CONFIG_BUILDERS.contains(&builder.rsplit('.').next().unwrap_or_default()) {
                continue;
            }
            let args = Arguments::of(self.source, *call);
            if args.keywords.is_empty() {
                continue;
            }
            fields.extend(args.keywords.iter().map(|(k, _)| k.clone()));
            let branch = blocks
                .iter()
                .enumerate()
                .filter(|(_, (block, _))| {
                    block.start_byte() <= call.start_byte() && call.end_byte() <= block.end_byte()
                })
                .min_by_key(|(_, (block, _))| block.end_byte() - block.start_byte())
                .map(|(i, _)| i);
            configs.push(ConfigSite {
                line: line(*call),
                fields: args
                    .keywords
                    .iter()
                    .map(|(k, v)| format!("{k}={}", self.source.flat_text(*v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                count: self.loop_product(*call, func.node),
                branch,
            });
        }
        ConfigGenerator {
            name: func.qname.clone(),
            line: line(func.node),
            fields: fields.into_iter().collect(),
            branches: blocks.into_iter().map(|(_, b)| b).collect(),
            configs,
        }
    }

    /// The product of the lengths of the literal lists iterated by the `for` loops around `node`
    /// (up to `stop`); `None` when a loop runs over something else.
    fn loop_product(&self, node: Node, stop: Node) -> Option<u64> {
        let mut product = 1u64;
        let mut current = node.parent();
        while let Some(n) = current {
            if n.id() == stop.id() {
                break;
            }
            if n.kind() == "for_statement" {
                let right = n.child_by_field_name("right")?;
                if !matches!(right.kind(), "list" | "tuple") {
                    return None;
                }
                product *= named_children(right).len() as u64;
            }
            current = n.parent();
        }
        Some(product)
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

fn prefix_is_class(prefix: &str, parent: Option<usize>, funcs: &[Func]) -> bool {
    !prefix.is_empty() && parent.is_none_or(|p| funcs[p].qname != prefix)
}

/// An identifier that reads a variable (not an attribute's name, a keyword argument's name, or a
/// parameter).
fn is_reference(node: Node) -> bool {
    let Some(parent) = node.parent() else {
        return true;
    };
    let is_field = |field: &str| {
        parent
            .child_by_field_name(field)
            .is_some_and(|c| c.id() == node.id())
    };
    match parent.kind() {
        "attribute" => !is_field("attribute"),
        "keyword_argument" => !is_field("name"),
        "lambda_parameters" | "parameters" | "default_parameter" | "typed_parameter" => false,
        _ => true,
    }
}

/// `.utils` in package `tilegym.ops.cutile` is `tilegym.ops.cutile.utils`; `..x` goes one up.
fn absolute_module(written: &str, package: &str) -> String {
    let dots = written.chars().take_while(|c| *c == '.').count();
    if dots == 0 {
        return written.to_string();
    }
    let mut parts: Vec<&str> = package.split('.').filter(|p| !p.is_empty()).collect();
    for _ in 1..dots {
        parts.pop();
    }
    let rest = &written[dots..];
    if !rest.is_empty() {
        parts.push(rest);
    }
    parts.join(".")
}

fn shorten(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(MAX).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_modules() {
        assert_eq!(
            absolute_module(".utils", "tilegym.ops.cutile"),
            "tilegym.ops.cutile.utils"
        );
        assert_eq!(
            absolute_module("..backend", "tilegym.ops.cutile"),
            "tilegym.ops.backend"
        );
        assert_eq!(absolute_module("tilegym.backend", "x"), "tilegym.backend");
    }
}
