//! The definitions of a file: its imports (as canonical names), functions and methods with their
//! parameters, top-level names, and assignments.

use tree_sitter::Node;

use super::{Assign, Func, Module};
use crate::features::inspect::syntax::{descendants, named_children};

impl<'t> Module<'t> {
    pub(super) fn import(&mut self, node: Node, package: &str) {
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

    pub(super) fn collect_functions(
        &mut self,
        node: Node<'t>,
        parent: Option<usize>,
        prefix: &str,
    ) {
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

    pub(super) fn assignment(&mut self, node: Node<'t>) {
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
}

fn prefix_is_class(prefix: &str, parent: Option<usize>, funcs: &[Func]) -> bool {
    !prefix.is_empty() && parent.is_none_or(|p| funcs[p].qname != prefix)
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
