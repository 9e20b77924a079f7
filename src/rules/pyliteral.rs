//! A parser for the Python literals that TileGym's benchmark records are written in.
//!
//! `record_property("benchmark", {...})` reaches the JUnit file as `str(dict)`, i.e. Python's `repr`:
//! single-quoted strings with backslash escapes, `True`/`False`/`None`, `nan`/`inf` floats, nested
//! dicts, lists and tuples. A regex over numbers would misread a kernel name such as `..._I512_I512` or
//! a string holding `'median': 1`, so the record is parsed as the grammar it is.

use std::fmt;

/// A Python value as written by `repr`.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    List(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
}

impl PyValue {
    /// The value stored under a string key of a dict.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Dict(items) => items
                .iter()
                .find(|(k, _)| matches!(k, PyValue::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string-keyed entries of a dict, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &PyValue)> {
        let items: &[(PyValue, PyValue)] = match self {
            PyValue::Dict(items) => items,
            _ => &[],
        };
        items.iter().filter_map(|(k, v)| match k {
            PyValue::Str(s) => Some((s.as_str(), v)),
            _ => None,
        })
    }

    /// A number as f64 (ints included; bools are not numbers here).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            PyValue::Int(i) => Some(*i as f64),
            PyValue::Float(f) => Some(*f),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// Parses one Python literal; trailing text other than whitespace is an error.
pub fn parse(text: &str) -> Result<PyValue, ParseError> {
    let mut parser = Parser { text, pos: 0 };
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != text.len() {
        return Err(parser.error("unexpected text after the value"));
    }
    Ok(value)
}

/// Deep enough for any record, shallow enough that hostile input cannot overflow the stack.
const MAX_DEPTH: usize = 64;

struct Parser<'a> {
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ParseError {
        ParseError {
            offset: self.pos,
            message: message.to_string(),
        }
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        let trimmed = self.rest().trim_start();
        self.pos = self.text.len() - trimmed.len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<PyValue, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.skip_ws();
        let Some(first) = self.rest().chars().next() else {
            return Err(self.error("unexpected end of input"));
        };
        match first {
            '{' => self.dict(depth),
            '[' => self.sequence('[', ']', depth),
            '(' => self.sequence('(', ')', depth),
            '\'' | '"' => self.string().map(PyValue::Str),
            c if c.is_ascii_digit() || c == '-' || c == '+' || c == '.' => self.number(),
            _ => self.word(),
        }
    }

    fn dict(&mut self, depth: usize) -> Result<PyValue, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if self.eat("}") {
                return Ok(PyValue::Dict(items));
            }
            let key = self.value(depth + 1)?;
            if !self.eat(":") {
                return Err(self.error("expected ':' in dict"));
            }
            let value = self.value(depth + 1)?;
            items.push((key, value));
            if !self.eat(",") {
                if self.eat("}") {
                    return Ok(PyValue::Dict(items));
                }
                return Err(self.error("expected ',' or '}' in dict"));
            }
        }
    }

    fn sequence(&mut self, open: char, close: char, depth: usize) -> Result<PyValue, ParseError> {
        debug_assert!(self.rest().starts_with(open));
        self.pos += 1;
        let close = close.to_string();
        let mut items = Vec::new();
        loop {
            if self.eat(&close) {
                return Ok(PyValue::List(items));
            }
            items.push(self.value(depth + 1)?);
            if !self.eat(",") {
                if self.eat(&close) {
                    return Ok(PyValue::List(items));
                }
                return Err(self.error("expected ',' or a closing bracket"));
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = self.rest().chars().next().expect("caller saw a quote");
        self.pos += 1;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                c if c == quote => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                '\\' => {
                    let Some((_, esc)) = chars.next() else { break };
                    match esc {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        '0' => out.push('\0'),
                        '\\' | '\'' | '"' => out.push(esc),
                        'x' | 'u' | 'U' => {
                            let width = match esc {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let hex: String = chars.by_ref().take(width).map(|(_, h)| h).collect();
                            let code = u32::from_str_radix(&hex, 16)
                                .ok()
                                .filter(|_| hex.len() == width)
                                .and_then(char::from_u32)
                                .ok_or_else(|| self.error("bad escape in string"))?;
                            out.push(code);
                        }
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        Err(self.error("unterminated string"))
    }

    fn number(&mut self) -> Result<PyValue, ParseError> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_')))
            .unwrap_or(rest.len());
        let token = &rest[..len];
        let value = match token {
            "-inf" => PyValue::Float(f64::NEG_INFINITY),
            "+inf" => PyValue::Float(f64::INFINITY),
            "-nan" | "+nan" => PyValue::Float(f64::NAN),
            _ => {
                let digits = token.replace('_', "");
                if let Ok(i) = digits.parse::<i128>() {
                    PyValue::Int(i)
                } else if let Some(f) = digits.parse::<f64>().ok().filter(|f| f.is_finite()) {
                    PyValue::Float(f)
                } else {
                    return Err(self.error(&format!("not a number: {token:?}")));
                }
            }
        };
        self.pos += len;
        Ok(value)
    }

    fn word(&mut self) -> Result<PyValue, ParseError> {
        let rest = self.rest();
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let value = match &rest[..len] {
            "None" => PyValue::None,
            "True" => PyValue::Bool(true),
            "False" => PyValue::Bool(false),
            "nan" => PyValue::Float(f64::NAN),
            "inf" => PyValue::Float(f64::INFINITY),
            word => return Err(self.error(&format!("unexpected {word:?}"))),
        };
        self.pos += len;
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> PyValue {
        PyValue::Str(text.to_string())
    }

    #[test]
    fn parses_nested_record() {
        let value =
            parse("{'cutile': {'forward': {'median': 0.25, 'nrep': 154, 'ok': True, 'x': None}}}")
                .unwrap();
        let forward = value.get("cutile").unwrap().get("forward").unwrap();
        assert_eq!(forward.get("median"), Some(&PyValue::Float(0.25)));
        assert_eq!(forward.get("nrep"), Some(&PyValue::Int(154)));
        assert_eq!(forward.get("ok"), Some(&PyValue::Bool(true)));
        assert_eq!(forward.get("x"), Some(&PyValue::None));
    }

    #[test]
    fn parses_special_floats_and_exponents() {
        let value = parse("[nan, inf, -inf, 1e-05, -2.5E+3, 7]").unwrap();
        let PyValue::List(items) = value else {
            panic!()
        };
        assert!(matches!(items[0], PyValue::Float(f) if f.is_nan()));
        assert_eq!(items[1], PyValue::Float(f64::INFINITY));
        assert_eq!(items[2], PyValue::Float(f64::NEG_INFINITY));
        assert_eq!(items[3], PyValue::Float(1e-05));
        assert_eq!(items[4], PyValue::Float(-2500.0));
        assert_eq!(items[5], PyValue::Int(7));
    }

    #[test]
    fn strings_may_hold_anything() {
        let value = parse(r#"{'name': "it's {'median': 9}", 'esc': 'a\'b\\n\n\x41\u00e9', 'k': 'vector<8, float>'}"#)
            .unwrap();
        assert_eq!(value.get("name"), Some(&s("it's {'median': 9}")));
        assert_eq!(value.get("esc"), Some(&s("a'b\\n\nAé")));
        assert_eq!(value.get("k"), Some(&s("vector<8, float>")));
    }

    #[test]
    fn tuples_and_trailing_commas() {
        assert_eq!(parse("(1,)").unwrap(), PyValue::List(vec![PyValue::Int(1)]));
        assert_eq!(
            parse("{'a': [1, 2,],}").unwrap().get("a"),
            Some(&PyValue::List(vec![PyValue::Int(1), PyValue::Int(2)]))
        );
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "{'a': }",
            "{'a' 1}",
            "[1 2]",
            "'open",
            "tensor(1.0)",
            "{'a': 1} extra",
            "1.2.3",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
        assert!(parse(&"[".repeat(10_000)).is_err());
    }
}
