//! Which module-level names each module-level name mentions, and which imports: the graph that
//! `ModuleFacts::reach` walks from a registered op to the launches it leads to.

use std::collections::{BTreeMap, BTreeSet};

use tree_sitter::Node;

use super::Module;
use crate::features::inspect::syntax::descendants;

/// Name -> the names (or canonical imports) its definition mentions.
pub(super) type Mentions = BTreeMap<String, BTreeSet<String>>;

impl Module<'_> {
    /// (top-level name -> top-level names it mentions, top-level name -> imports it mentions).
    pub(super) fn mentions(&self) -> (Mentions, Mentions) {
        let mut edges = Mentions::new();
        let mut imports_used = Mentions::new();
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
                    edges
                        .entry(name.to_string())
                        .or_default()
                        .insert(text.to_string());
                } else if let Some(full) = self.aliases.get(text) {
                    imports_used
                        .entry(name.to_string())
                        .or_default()
                        .insert(full.clone());
                }
            }
        }
        (edges, imports_used)
    }
}
