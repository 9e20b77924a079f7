//! Which branch of a config generator a GPU takes: conditions on `torch.cuda.get_device_capability()`
//! evaluated for a given compute capability, in three-valued logic (a condition on anything else is
//! unknown, and `False and unknown` is still false).

use std::collections::BTreeMap;

use tree_sitter::Node;

use super::syntax::{Source, descendants, named_children};

/// What a variable holds: the capability tuple, or one of its two numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapVar {
    Whole,
    Major,
    Minor,
}

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Bool(bool),
    Int(i64),
    Seq(Vec<Value>),
    Unknown,
}

/// True when `node` mentions the capability (a capability variable or the call itself).
pub fn mentions_capability(source: &Source, node: Node, vars: &BTreeMap<String, CapVar>) -> bool {
    descendants(node).into_iter().any(|n| {
        (n.kind() == "identifier" && vars.contains_key(source.text_of(n)))
            || is_capability_call(source, n)
    })
}

pub fn is_capability_call(source: &Source, node: Node) -> bool {
    node.kind() == "call"
        && node
            .child_by_field_name("function")
            .and_then(|f| source.dotted(f))
            .is_some_and(|name| name.ends_with("get_device_capability"))
}

/// `Some(true|false)` when the condition's value follows from the capability alone.
pub fn evaluate(
    source: &Source,
    condition: Node,
    vars: &BTreeMap<String, CapVar>,
    capability: (u32, u32),
) -> Option<bool> {
    match eval(source, condition, vars, capability) {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

fn eval(source: &Source, node: Node, vars: &BTreeMap<String, CapVar>, cc: (u32, u32)) -> Value {
    let cap = || Value::Seq(vec![Value::Int(cc.0 as i64), Value::Int(cc.1 as i64)]);
    match node.kind() {
        "parenthesized_expression" => named_children(node)
            .first()
            .map_or(Value::Unknown, |inner| eval(source, *inner, vars, cc)),
        "integer" => source
            .text_of(node)
            .parse()
            .map_or(Value::Unknown, Value::Int),
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "tuple" | "list" => Value::Seq(
            named_children(node)
                .into_iter()
                .map(|n| eval(source, n, vars, cc))
                .collect(),
        ),
        "identifier" => match vars.get(source.text_of(node)) {
            Some(CapVar::Whole) => cap(),
            Some(CapVar::Major) => Value::Int(cc.0 as i64),
            Some(CapVar::Minor) => Value::Int(cc.1 as i64),
            None => Value::Unknown,
        },
        "call" if is_capability_call(source, node) => cap(),
        "subscript" => {
            let (Some(value), Some(index)) = (
                node.child_by_field_name("value"),
                node.child_by_field_name("subscript"),
            ) else {
                return Value::Unknown;
            };
            match (eval(source, value, vars, cc), eval(source, index, vars, cc)) {
                (Value::Seq(items), Value::Int(i)) if i >= 0 => {
                    items.get(i as usize).cloned().unwrap_or(Value::Unknown)
                }
                _ => Value::Unknown,
            }
        }
        "not_operator" => match node
            .child_by_field_name("argument")
            .map(|a| eval(source, a, vars, cc))
        {
            Some(Value::Bool(b)) => Value::Bool(!b),
            _ => Value::Unknown,
        },
        "boolean_operator" => {
            let (Some(left), Some(right), Some(op)) = (
                node.child_by_field_name("left"),
                node.child_by_field_name("right"),
                node.child_by_field_name("operator"),
            ) else {
                return Value::Unknown;
            };
            let l = eval(source, left, vars, cc);
            let r = eval(source, right, vars, cc);
            let is_and = source.text_of(op) == "and";
            match (l, r) {
                (Value::Bool(a), Value::Bool(b)) => {
                    Value::Bool(if is_and { a && b } else { a || b })
                }
                (Value::Bool(x), _) | (_, Value::Bool(x)) if x != is_and => Value::Bool(x),
                _ => Value::Unknown,
            }
        }
        "comparison_operator" => compare_chain(source, node, vars, cc),
        _ => Value::Unknown,
    }
}

/// `a < b <= c`: operands are the named children, operators the anonymous ones between them
/// (`not in` and `is not` are two tokens).
fn compare_chain(
    source: &Source,
    node: Node,
    vars: &BTreeMap<String, CapVar>,
    cc: (u32, u32),
) -> Value {
    let mut operands = Vec::new();
    let mut operators: Vec<String> = Vec::new();
    let mut cursor = node.walk();
    let mut pending = String::new();
    for child in node.children(&mut cursor) {
        if child.is_named() {
            if !pending.is_empty() {
                operators.push(std::mem::take(&mut pending));
            }
            operands.push(eval(source, child, vars, cc));
        } else {
            if !pending.is_empty() {
                pending.push(' ');
            }
            pending.push_str(source.text_of(child));
        }
    }
    if operands.len() != operators.len() + 1 {
        return Value::Unknown;
    }
    let mut all = true;
    for (i, op) in operators.iter().enumerate() {
        match compare(&operands[i], op, &operands[i + 1]) {
            Some(true) => {}
            Some(false) => all = false,
            None => return Value::Unknown,
        }
    }
    Value::Bool(all)
}

fn compare(left: &Value, op: &str, right: &Value) -> Option<bool> {
    let known = |v: &Value| !contains_unknown(v);
    if !known(left) || !known(right) {
        return None;
    }
    match op {
        "in" | "not in" => match right {
            Value::Seq(items) => Some(items.contains(left) == (op == "in")),
            _ => None,
        },
        "==" => Some(left == right),
        "!=" => Some(left != right),
        "<" | "<=" | ">" | ">=" => {
            let ordering = order(left, right)?;
            Some(match op {
                "<" => ordering.is_lt(),
                "<=" => ordering.is_le(),
                ">" => ordering.is_gt(),
                _ => ordering.is_ge(),
            })
        }
        _ => None,
    }
}

fn contains_unknown(value: &Value) -> bool {
    match value {
        Value::Unknown => true,
        Value::Seq(items) => items.iter().any(contains_unknown),
        _ => false,
    }
}

/// Python's ordering of ints and of tuples of ints.
fn order(left: &Value, right: &Value) -> Option<std::cmp::Ordering> {
    match (left, right) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Seq(a), Value::Seq(b)) => {
            for (x, y) in a.iter().zip(b) {
                match order(x, y)? {
                    std::cmp::Ordering::Equal => continue,
                    other => return Some(other),
                }
            }
            Some(a.len().cmp(&b.len()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(condition: &str, cc: (u32, u32)) -> Option<bool> {
        let text = format!(
            "cap = torch.cuda.get_device_capability()\nmajor, minor = cap\nif {condition}:\n    pass\n"
        );
        let source = Source::parse(&text).unwrap();
        let vars = BTreeMap::from([
            ("cap".to_string(), CapVar::Whole),
            ("major".to_string(), CapVar::Major),
            ("minor".to_string(), CapVar::Minor),
        ]);
        let condition = descendants(source.root())
            .into_iter()
            .find(|n| n.kind() == "if_statement")
            .and_then(|n| n.child_by_field_name("condition"))
            .unwrap();
        evaluate(&source, condition, &vars, cc)
    }

    #[test]
    fn capability_conditions() {
        assert_eq!(check("cap in [(12, 0), (12, 1)]", (9, 0)), Some(false));
        assert_eq!(check("cap in [(12, 0), (12, 1)]", (12, 1)), Some(true));
        assert_eq!(check("cap not in [(12, 0), (12, 1)]", (9, 0)), Some(true));
        assert_eq!(check("cap[0] < 9", (8, 6)), Some(true));
        assert_eq!(check("cap[0] < 9", (9, 0)), Some(false));
        assert_eq!(check("cap == (9, 0)", (9, 0)), Some(true));
        assert_eq!(check("cap >= (10, 0)", (9, 0)), Some(false));
        assert_eq!(check("(9, 0) <= cap < (10, 0)", (9, 0)), Some(true));
        assert_eq!(check("major == 10 and minor == 3", (10, 3)), Some(true));
        assert_eq!(check("not major >= 10", (9, 0)), Some(true));
        assert_eq!(
            check("torch.cuda.get_device_capability()[0] != 9", (9, 0)),
            Some(false)
        );
    }

    #[test]
    fn other_variables_make_it_unknown_unless_the_logic_decides() {
        assert_eq!(check("use_tma and cap[0] < 9", (9, 0)), Some(false));
        assert_eq!(check("use_tma and cap[0] < 9", (8, 0)), None);
        assert_eq!(check("use_tma or cap[0] < 9", (8, 0)), Some(true));
        assert_eq!(check("is_blackwell()", (10, 0)), None);
    }
}
