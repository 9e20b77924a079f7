//! Python source as a tree-sitter syntax tree, with the few questions the inspector asks of it.
//!
//! Parsing never imports or runs the code. tree-sitter recovers from errors, so a file with a syntax
//! error is refused here, with the first bad line, rather than half-understood.

use tree_sitter::{Node, Parser, Tree};

/// A parsed Python file.
pub struct Source {
    pub text: String,
    pub tree: Tree,
}

/// The first syntax error of a file: 1-based line and column, and the text there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("syntax error at line {line}, column {column}: {snippet}")]
pub struct SyntaxError {
    pub line: usize,
    pub column: usize,
    pub snippet: String,
}

impl Source {
    pub fn parse(text: &str) -> Result<Source, SyntaxError> {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .expect("the bundled Python grammar matches the tree-sitter runtime");
        let tree = parser
            .parse(text, None)
            .expect("a parser with a language and no timeout always returns a tree");
        let source = Source {
            text: text.to_string(),
            tree,
        };
        // every reader below walks the tree recursively: a tree deeper than any Python parses is refused
        // before it can exhaust the stack
        if let Some(deep) = deeper_than(source.tree.root_node(), MAX_DEPTH) {
            return Err(SyntaxError {
                line: deep.start_position().row + 1,
                column: deep.start_position().column + 1,
                snippet: format!(
                    "nested more than {MAX_DEPTH} levels deep, which Python does not parse (it stops at 200 \
                     nested parentheses)"
                ),
            });
        }
        if let Some(bad) = first_error(source.tree.root_node()) {
            let line_text = text.lines().nth(bad.start_position().row).unwrap_or("");
            return Err(SyntaxError {
                line: bad.start_position().row + 1,
                column: bad.start_position().column + 1,
                snippet: line_text.trim().chars().take(80).collect(),
            });
        }
        Ok(source)
    }

    pub fn root(&self) -> Node<'_> {
        self.tree.root_node()
    }

    pub fn text_of(&self, node: Node) -> &str {
        &self.text[node.byte_range()]
    }

    /// The node's text on one line, runs of whitespace collapsed (a grid split over lines reads as one).
    pub fn flat_text(&self, node: Node) -> String {
        self.text_of(node)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace("( ", "(")
            .replace(", )", ")")
            .replace(" )", ")")
    }

    /// `a.b.c` for an identifier or a chain of attributes on one, else `None` (`f().x`, `a[0].y`).
    pub fn dotted(&self, node: Node) -> Option<String> {
        match node.kind() {
            "identifier" => Some(self.text_of(node).to_string()),
            "attribute" => {
                let object = self.dotted(node.child_by_field_name("object")?)?;
                let attribute = node.child_by_field_name("attribute")?;
                Some(format!("{object}.{}", self.text_of(attribute)))
            }
            _ => None,
        }
    }
}

/// Syntax-tree depth past which a file is refused; Python's own parser refuses far less.
const MAX_DEPTH: usize = 1000;

/// The first node more than `limit` levels below `root`, found without recursion.
fn deeper_than(root: Node, limit: usize) -> Option<Node> {
    let mut cursor = root.walk();
    let mut depth = 0;
    loop {
        if depth > limit {
            return Some(cursor.node());
        }
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
            depth -= 1;
        }
    }
}

fn first_error(node: Node) -> Option<Node> {
    if !node.has_error() {
        return None;
    }
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error).or(Some(node))
}

/// 1-based line of a node.
pub fn line(node: Node) -> usize {
    node.start_position().row + 1
}

/// Every node below `node` (itself included), depth first, in source order.
pub fn descendants(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        out.push(n);
        let mut cursor = n.walk();
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out
}

pub fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// A call's arguments: positional ones in order, and keyword ones by name.
pub struct Arguments<'t> {
    pub positional: Vec<Node<'t>>,
    pub keywords: Vec<(String, Node<'t>)>,
}

impl<'t> Arguments<'t> {
    pub fn of(source: &Source, call: Node<'t>) -> Arguments<'t> {
        let mut args = Arguments {
            positional: Vec::new(),
            keywords: Vec::new(),
        };
        let Some(list) = call.child_by_field_name("arguments") else {
            return args;
        };
        for child in named_children(list) {
            match child.kind() {
                "keyword_argument" => {
                    if let (Some(name), Some(value)) = (
                        child.child_by_field_name("name"),
                        child.child_by_field_name("value"),
                    ) {
                        args.keywords
                            .push((source.text_of(name).to_string(), value));
                    }
                }
                "comment" => {}
                _ => args.positional.push(child),
            }
        }
        args
    }

    pub fn keyword(&self, name: &str) -> Option<Node<'t>> {
        self.keywords
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, value)| *value)
    }

    /// The argument at `index` or named `name`.
    pub fn get(&self, index: usize, name: &str) -> Option<Node<'t>> {
        self.positional
            .get(index)
            .copied()
            .or_else(|| self.keyword(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_names_its_line() {
        let err = Source::parse("x = 1\ndef f(:\n    pass\n").err().unwrap();
        assert_eq!(err.line, 2);
        assert!(
            err.to_string().starts_with("syntax error at line 2"),
            "{err}"
        );
    }

    #[test]
    fn dotted_names_and_flat_text() {
        let source = Source::parse("cuda.tile.launch(s, (\n  a,\n  b,\n), k, (g,))\n").unwrap();
        let call = descendants(source.root())
            .into_iter()
            .find(|n| n.kind() == "call")
            .unwrap();
        let callee = call.child_by_field_name("function").unwrap();
        assert_eq!(source.dotted(callee).unwrap(), "cuda.tile.launch");
        let args = Arguments::of(&source, call);
        assert_eq!(source.flat_text(args.positional[1]), "(a, b)");
        assert_eq!(source.flat_text(args.positional[3]), "(g,)");
    }
}
