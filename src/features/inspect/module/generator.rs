//! Autotune config generators: the configs a function builds, how many each yields, and the
//! GPU-architecture branch each is built under (with the branch a given capability takes).

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::{ArchBranch, ConfigGenerator, ConfigSite, Module, TuningCall};
use crate::features::inspect::arch::{self, CapVar};
use crate::features::inspect::syntax::{Arguments, descendants, line, named_children};

/// Calls that build one autotune config from keyword arguments.
const CONFIG_BUILDERS: [&str; 3] = ["SimpleNamespace", "Config", "dict"];

/// An arch branch's block, and the branch.
type Block<'t> = (Node<'t>, ArchBranch);

impl<'t> Module<'t> {
    /// The generators among `funcs` (the functions the tunings' spaces resolve to); a function that
    /// builds no config is dropped from the tunings' generators too.
    pub(super) fn generators(
        &self,
        funcs: BTreeSet<usize>,
        tunings: &mut [TuningCall],
        capability: Option<(u32, u32)>,
    ) -> Vec<ConfigGenerator> {
        let mut generators = Vec::new();
        for f in funcs {
            let generator = self.generator(f, capability);
            if generator.configs.is_empty() {
                // a helper the space mentions (a flag, a size), not a builder of configs
                tunings
                    .iter_mut()
                    .for_each(|t| t.generators.retain(|g| *g != generator.name));
            } else {
                generators.push(generator);
            }
        }
        generators
    }

    fn generator(&self, f: usize, capability: Option<(u32, u32)>) -> ConfigGenerator {
        let func = &self.funcs[f];
        let nodes: Vec<Node> = descendants(func.node);
        let vars = self.capability_vars(f);
        let blocks = self.arch_branches(&nodes, &vars, capability);
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
            configs.push(ConfigSite {
                line: line(*call),
                fields: args
                    .keywords
                    .iter()
                    .map(|(k, v)| format!("{k}={}", self.source.flat_text(*v)))
                    .collect::<Vec<_>>()
                    .join(", "),
                count: self.loop_product(*call, func.node),
                branch: innermost_block(&blocks, *call),
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

    /// The variables of function `f` assigned from the GPU's capability, and which part each holds.
    fn capability_vars(&self, f: usize) -> BTreeMap<String, CapVar> {
        let mut vars = BTreeMap::new();
        for assign in self
            .assigns
            .iter()
            .filter(|a| a.func == Some(f) && !a.into_subscript)
        {
            if !descendants(assign.value)
                .into_iter()
                .any(|n| arch::is_capability_call(self.source, n))
            {
                continue;
            }
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
        vars
    }

    /// Every arm of the `if` statements among `nodes` that test the capability, with whether
    /// `capability` takes it.
    fn arch_branches(
        &self,
        nodes: &[Node<'t>],
        vars: &BTreeMap<String, CapVar>,
        capability: Option<(u32, u32)>,
    ) -> Vec<Block<'t>> {
        let mut blocks = Vec::new();
        for node in nodes.iter().filter(|n| n.kind() == "if_statement") {
            let Some(condition) = node.child_by_field_name("condition") else {
                continue;
            };
            if !arch::mentions_capability(self.source, condition, vars) {
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
                    (Some(c), Some(cc)) => arch::evaluate(self.source, c, vars, cc),
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
        blocks
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

/// Index into `blocks` of the innermost block around `call`.
fn innermost_block(blocks: &[Block], call: Node) -> Option<usize> {
    blocks
        .iter()
        .enumerate()
        .filter(|(_, (block, _))| {
            block.start_byte() <= call.start_byte() && call.end_byte() <= block.end_byte()
        })
        .min_by_key(|(_, (block, _))| block.end_byte() - block.start_byte())
        .map(|(i, _)| i)
}
