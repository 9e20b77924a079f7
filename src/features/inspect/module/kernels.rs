//! Kernels: the functions `ct.kernel` decorates or wraps, with their options, and what their bodies
//! (and the helpers of this file they call) show: MMA, tile shapes, dtypes.

use std::collections::{BTreeSet, HashSet};

use tree_sitter::Node;

use super::{KERNEL, KernelDef, Module, Opt, TILE, decorators};
use crate::features::inspect::syntax::{Arguments, descendants, line};

const MMA: [&str; 2] = ["cuda.tile.mma", "cuda.tile.matmul"];
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

impl Module<'_> {
    pub(super) fn collect_kernels(&mut self) {
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
                    "binary_operator"
                        if node
                            .child_by_field_name("operator")
                            .is_some_and(|op| self.source.text_of(op) == "@") =>
                    {
                        mma = true;
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
}
