//! The inputs of a scaffolded session perf file, derived from the calls of the kernel's registered op
//! that its correctness tests made (recorded by `cutile_perf_calls.py`): the call structure most of them
//! share (argument kinds, tensor ranks and dtypes, keyword names), at its largest recorded size, as Python
//! that builds it again, with the dimension that reads as a batch grown by a factor `growth`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One argument of a recorded call, as the recorder describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Argument {
    Tensor {
        shape: Vec<u64>,
        dtype: String,
        device: String,
    },
    /// A number, a string, a bool or None.
    Value {
        value: serde_json::Value,
    },
    Dtype {
        name: String,
    },
    Tuple {
        items: Vec<Argument>,
    },
    List {
        items: Vec<Argument>,
    },
    /// Anything else, by its type's name: not built again.
    Other {
        #[serde(rename = "type")]
        type_name: String,
    },
}

/// One recorded call of the op.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Call {
    pub args: Vec<Argument>,
    pub kwargs: BTreeMap<String, Argument>,
}

/// The call a perf file builds again, and what it grows.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub call: Call,
    /// How many recorded calls share its structure, of how many.
    pub alike: usize,
    pub recorded: usize,
    /// The size of the batch-like dimension that grows: every dimension of this size, in every tensor.
    pub grown: Option<u64>,
}

/// The recorded call to build again, or why none can be.
pub fn derive(calls: &[Call]) -> Result<Derived, String> {
    let mut groups: Vec<(String, Vec<&Call>)> = Vec::new();
    for call in calls {
        let key = structure(call);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(call),
            None => groups.push((key, vec![call])),
        }
    }
    // the structure most calls share that can be built again, the first recorded on a tie; its largest
    // call, the first on a tie
    groups.sort_by_key(|(_, members)| std::cmp::Reverse(members.len()));
    let mut refusal = None;
    let (members, call) = groups
        .iter()
        .find_map(|(_, members)| {
            let call = members
                .iter()
                .rev()
                .max_by_key(|call| elements(call))
                .expect("a group has a member");
            let why = named(call).into_iter().find_map(|(name, argument)| {
                Some(format!("its argument {name} is {}", unbuildable(argument)?))
            });
            match why {
                Some(why) => {
                    refusal.get_or_insert(why);
                    None
                }
                None => Some((members, call)),
            }
        })
        .ok_or_else(|| refusal.unwrap_or_else(|| "the tests made no call of the op".to_string()))?;
    Ok(Derived {
        call: (*call).clone(),
        alike: members.len(),
        recorded: calls.len(),
        grown: batch_dimension(call),
    })
}

/// Each argument with the name it is shown by: its position, or its keyword.
fn named(call: &Call) -> Vec<(String, &Argument)> {
    let positional = call
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("#{}", i + 1), a));
    positional
        .chain(call.kwargs.iter().map(|(k, a)| (k.clone(), a)))
        .collect()
}

fn structure(call: &Call) -> String {
    let words: Vec<String> = named(call)
        .into_iter()
        .map(|(name, argument)| format!("{name}={}", kind(argument)))
        .collect();
    words.join(" ")
}

fn kind(argument: &Argument) -> String {
    match argument {
        Argument::Tensor { shape, dtype, .. } => format!("{dtype}/{}", shape.len()),
        Argument::Value { value } => match value {
            serde_json::Value::Number(n) if n.is_f64() => "float".into(),
            serde_json::Value::Number(_) => "int".into(),
            other => other.to_string(),
        },
        Argument::Dtype { name } => name.clone(),
        Argument::Tuple { items } | Argument::List { items } => {
            let inner: Vec<String> = items.iter().map(kind).collect();
            format!("[{}]", inner.join(","))
        }
        Argument::Other { type_name } => type_name.clone(),
    }
}

fn tensors(argument: &Argument) -> Vec<&[u64]> {
    match argument {
        Argument::Tensor { shape, .. } => vec![shape],
        Argument::Tuple { items } | Argument::List { items } => {
            items.iter().flat_map(tensors).collect()
        }
        _ => Vec::new(),
    }
}

fn all_tensors(call: &Call) -> Vec<&[u64]> {
    named(call)
        .into_iter()
        .flat_map(|(_, a)| tensors(a))
        .collect()
}

fn elements(call: &Call) -> u64 {
    all_tensors(call)
        .iter()
        .map(|shape| shape.iter().product::<u64>())
        .sum()
}

/// Why an argument cannot be written as Python, if it cannot.
fn unbuildable(argument: &Argument) -> Option<String> {
    match argument {
        Argument::Other { type_name } => Some(format!(
            "a {type_name}, which the recorder cannot build again"
        )),
        Argument::Tensor { dtype, .. } | Argument::Dtype { name: dtype }
            if !is_torch_name(dtype) =>
        {
            Some(format!("of dtype {dtype}, not one of torch's"))
        }
        Argument::Tuple { items } | Argument::List { items } => items.iter().find_map(unbuildable),
        _ => None,
    }
}

fn is_torch_name(name: &str) -> bool {
    name.strip_prefix("torch.").is_some_and(|rest| {
        !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The size that reads as a batch: one that some tensor of two or more dimensions has before its last,
/// and none has as its last (the hidden size a weight shares), taken from the largest tensor's outermost
/// such dimension. A size of 1 is a broadcast, never grown.
fn batch_dimension(call: &Call) -> Option<u64> {
    let shapes = all_tensors(call);
    let is_batch = |size: u64| {
        size > 1
            && !shapes
                .iter()
                .any(|s| s.len() >= 2 && s.last() == Some(&size))
            && shapes
                .iter()
                .any(|s| s.len() >= 2 && s[..s.len() - 1].contains(&size))
    };
    let largest = shapes
        .iter()
        .rev()
        .max_by_key(|s| s.iter().product::<u64>())?;
    largest.iter().copied().find(|&size| is_batch(size))
}

impl Derived {
    /// The Python expressions of the positional and the keyword arguments, the grown dimension
    /// multiplied by `growth`.
    pub fn python(&self) -> (Vec<String>, Vec<(String, String)>) {
        let args = self.call.args.iter().map(|a| self.expression(a)).collect();
        let kwargs = self
            .call
            .kwargs
            .iter()
            .map(|(k, a)| (k.clone(), self.expression(a)))
            .collect();
        (args, kwargs)
    }

    fn expression(&self, argument: &Argument) -> String {
        match argument {
            Argument::Tensor {
                shape,
                dtype,
                device,
            } => {
                let dims: Vec<String> = shape
                    .iter()
                    .map(|&d| match self.grown {
                        Some(grown) if grown == d => format!("{d} * growth"),
                        _ => d.to_string(),
                    })
                    .collect();
                // random values where the dtype has them; zeros (a valid index, a false mask) elsewhere
                let fill = if ["float", "half", "complex"]
                    .iter()
                    .any(|w| dtype.contains(w))
                {
                    "randn"
                } else {
                    "zeros"
                };
                let device = if device.starts_with("cuda") {
                    "cuda"
                } else {
                    device
                };
                format!(
                    "torch.{fill}(({},), dtype={dtype}, device={device:?})",
                    dims.join(", ")
                )
            }
            Argument::Value { value } => match value {
                serde_json::Value::Null => "None".into(),
                serde_json::Value::Bool(b) => if *b { "True" } else { "False" }.into(),
                other => other.to_string(),
            },
            Argument::Dtype { name } => name.clone(),
            Argument::Tuple { items } => {
                let inner: Vec<String> = items.iter().map(|a| self.expression(a) + ",").collect();
                format!("({})", inner.join(" "))
            }
            Argument::List { items } => {
                let inner: Vec<String> = items.iter().map(|a| self.expression(a)).collect();
                format!("[{}]", inner.join(", "))
            }
            Argument::Other { type_name } => unreachable!("a {type_name} is refused by derive"),
        }
    }

    /// The recorded call in a line: `X: torch.float32[8, 64], W: torch.float32[64], eps: 1e-05`.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = named(&self.call)
            .into_iter()
            .map(|(name, argument)| format!("{name}: {}", shown(argument)))
            .collect();
        parts.join(", ")
    }
}

fn shown(argument: &Argument) -> String {
    match argument {
        Argument::Tensor { shape, dtype, .. } => {
            let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("{dtype}[{}]", dims.join(", "))
        }
        Argument::Value { value } => value.to_string(),
        Argument::Dtype { name } => name.clone(),
        Argument::Tuple { items } | Argument::List { items } => {
            let inner: Vec<String> = items.iter().map(shown).collect();
            format!("({})", inner.join(", "))
        }
        Argument::Other { type_name } => type_name.clone(),
    }
}

/// The recorded calls of the recorder's file, one JSON line each.
pub fn parse_calls(text: &str) -> Result<Vec<Call>, serde_json::Error> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(serde_json::from_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[u64], dtype: &str) -> String {
        format!(
            r#"{{"kind": "tensor", "shape": {shape:?}, "dtype": "{dtype}", "device": "cuda:0"}}"#
        )
    }

    fn layer_norm_call(shape: &[u64], dtype: &str) -> String {
        let hidden = [*shape.last().unwrap()];
        format!(
            r#"{{"args": [], "kwargs": {{"X": {}, "W": {}, "B": {}, "eps": {{"kind": "value", "value": 1e-05}}}}}}"#,
            tensor(shape, dtype),
            tensor(&hidden, dtype),
            tensor(&hidden, dtype)
        )
    }

    #[test]
    fn the_most_shared_structure_is_built_at_its_largest_size_its_batch_grown() {
        let lines = [
            layer_norm_call(&[4, 256], "torch.float32"),
            layer_norm_call(&[16, 1024], "torch.float32"),
            layer_norm_call(&[2, 4, 512], "torch.float32"),
            layer_norm_call(&[4, 256], "torch.bfloat16"),
        ];
        let calls = parse_calls(&lines.join("\n")).unwrap();
        let derived = derive(&calls).unwrap();
        assert_eq!(
            (derived.alike, derived.recorded, derived.grown),
            (2, 4, Some(16))
        );
        assert_eq!(
            derived.summary(),
            "B: torch.float32[1024], W: torch.float32[1024], X: torch.float32[16, 1024], eps: 0.00001"
        );
        let (args, kwargs) = derived.python();
        assert!(args.is_empty());
        assert_eq!(
            kwargs[2],
            (
                "X".to_string(),
                "torch.randn((16 * growth, 1024,), dtype=torch.float32, device=\"cuda\")"
                    .to_string()
            )
        );
        assert_eq!(
            kwargs[0].1,
            "torch.randn((1024,), dtype=torch.float32, device=\"cuda\")"
        );
        assert_eq!(kwargs[3].1, "0.00001");
    }

    #[test]
    fn a_size_some_tensor_has_last_or_a_broadcast_one_is_never_grown() {
        let call = |shapes: &[&[u64]]| Call {
            args: shapes
                .iter()
                .map(|s| Argument::Tensor {
                    shape: s.to_vec(),
                    dtype: "torch.int64".into(),
                    device: "cpu".into(),
                })
                .collect(),
            kwargs: BTreeMap::new(),
        };
        // logits and their labels: the rows grow
        assert_eq!(batch_dimension(&call(&[&[8, 32000], &[8]])), Some(8));
        // a square matrix: nothing reads as a batch
        assert_eq!(batch_dimension(&call(&[&[64, 64], &[64, 64]])), None);
        // rotary embedding: the heads, not the broadcast 1
        assert_eq!(
            batch_dimension(&call(&[&[1, 8, 128, 64], &[1, 128, 64]])),
            Some(8)
        );
        let built = Derived {
            call: call(&[&[8, 4]]),
            alike: 1,
            recorded: 1,
            grown: Some(8),
        };
        assert_eq!(
            built.python().0[0],
            "torch.zeros((8 * growth, 4,), dtype=torch.int64, device=\"cpu\")"
        );
    }

    #[test]
    fn a_call_that_cannot_be_built_again_is_refused_with_its_reason() {
        let calls = parse_calls(
            r#"{"args": [{"kind": "other", "type": "ProcessGroup"}, {"kind": "list", "items": [{"kind": "value", "value": 1.5}]}], "kwargs": {}}"#,
        )
        .unwrap();
        assert_eq!(
            derive(&calls).unwrap_err(),
            "its argument #1 is a ProcessGroup, which the recorder cannot build again"
        );
        assert_eq!(derive(&[]).unwrap_err(), "the tests made no call of the op");
        // where another structure can be built, it is, though fewer calls share it
        let mut mixed = calls.clone();
        mixed.extend(
            parse_calls(r#"{"args": [{"kind": "value", "value": 3}], "kwargs": {}}"#).unwrap(),
        );
        mixed.push(calls[0].clone());
        assert_eq!(derive(&mixed).unwrap().alike, 1);
        let host = parse_calls(
            r#"{"args": [{"kind": "list", "items": [{"kind": "value", "value": 1.5}]}, {"kind": "value", "value": null}], "kwargs": {"flag": {"kind": "value", "value": true}, "name": {"kind": "value", "value": "a\"b"}}}"#,
        )
        .unwrap();
        let derived = derive(&host).unwrap();
        assert_eq!(derived.grown, None);
        let (args, kwargs) = derived.python();
        assert_eq!(args, ["[1.5]", "None"]);
        assert_eq!(kwargs[0].1, "True");
        assert_eq!(kwargs[1].1, r#""a\"b""#);
    }
}
