//! Which names a kernel expression can stand for: a Python-like lookup through assignments,
//! parameters (what this file's callers pass), enclosing functions, `return`s and imports.

use std::collections::{BTreeSet, HashSet};

use tree_sitter::Node;

use super::{Assign, Module, TILE};
use crate::features::inspect::syntax::{Arguments, descendants};

/// What a name can be bound to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Sym {
    Kernel(String),
    Function(usize),
    Imported(String),
}

impl Module<'_> {
    pub(super) fn kernel_names(&self, syms: &BTreeSet<Sym>) -> Vec<String> {
        syms.iter()
            .filter_map(|sym| match sym {
                Sym::Kernel(name) => Some(name.clone()),
                Sym::Imported(full) if !full.starts_with(TILE) => Some(full.clone()),
                _ => None,
            })
            .collect()
    }

    pub(super) fn resolve(&self, expr: Node, func: Option<usize>) -> BTreeSet<Sym> {
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
