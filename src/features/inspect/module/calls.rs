//! The calls the inspector reports: `ct.launch` sites, autotune searches and their generators, and
//! op registrations.

use std::collections::BTreeSet;

use tree_sitter::Node;

use super::resolve::Sym;
use super::{Launch, Module, Registration, TuningCall, decorators};
use crate::features::inspect::syntax::{Arguments, line, named_children};

const LAUNCH: &str = "cuda.tile.launch";
const EXHAUSTIVE_SEARCH: &str = "cuda.tile.tune.exhaustive_search";
const REGISTER_IMPL: &str = "register_impl";

impl<'t> Module<'t> {
    /// The `ct.launch` sites, in the file's order.
    pub(super) fn launches(&self) -> Vec<Launch> {
        let mut launches = Vec::new();
        for call in self.calls_of(LAUNCH) {
            let func = self.func_around(call);
            let args = Arguments::of(self.source, call);
            let Some(kernel) = args.get(2, "kernel") else {
                continue;
            };
            launches.push(Launch {
                line: line(call),
                wrapper: self.function_name(func),
                kernel_expr: self.source.flat_text(kernel),
                kernels: self.kernel_names(&self.resolve(kernel, func)),
                grid: args
                    .get(1, "grid")
                    .map(|g| self.source.flat_text(g))
                    .unwrap_or_default(),
                grid_value: args.get(1, "grid").and_then(|g| self.latest_value(g, func)),
                top: self.top_around(call),
            });
        }
        launches
    }

    /// The autotune searches, in the file's order, and the functions their spaces resolve to.
    pub(super) fn tunings(&self) -> (Vec<TuningCall>, BTreeSet<usize>) {
        let mut tunings = Vec::new();
        let mut generator_funcs = BTreeSet::new();
        for call in self.calls_of(EXHAUSTIVE_SEARCH) {
            let func = self.func_around(call);
            let args = Arguments::of(self.source, call);
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
            tunings.push(TuningCall {
                line: line(call),
                function: self.function_name(func),
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
                top: self.top_around(call),
            });
        }
        (tunings, generator_funcs)
    }

    /// The `register_impl(...)` decorators, function by function.
    pub(super) fn registrations(&self) -> Vec<Registration> {
        let mut registrations = Vec::new();
        for func in &self.funcs {
            for call in decorators(func.node)
                .into_iter()
                .filter(|e| e.kind() == "call")
            {
                if self
                    .callee(call)
                    .is_none_or(|c| c.rsplit('.').next() != Some(REGISTER_IMPL))
                {
                    continue;
                }
                let args = Arguments::of(self.source, call);
                registrations.push(Registration {
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
        registrations
    }

    /// The calls of the canonical name `callee`, in the file's order.
    fn calls_of(&self, callee: &str) -> impl Iterator<Item = Node<'t>> {
        self.calls
            .iter()
            .copied()
            .filter(move |call| self.callee(*call).as_deref() == Some(callee))
    }

    /// `Class.method`, `outer.inner`, or `<module>` outside any function.
    fn function_name(&self, func: Option<usize>) -> String {
        func.map_or("<module>".to_string(), |f| self.funcs[f].qname.clone())
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
}

fn shorten(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        format!("{}...", text.chars().take(MAX).collect::<String>())
    }
}
