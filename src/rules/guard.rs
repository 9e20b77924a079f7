//! The rule of a session: only the allowed paths may change, and nothing under `sandbox/` is ever
//! committed. Paths are compared byte for byte as git stores them, so no `..`, case-folding or
//! unicode-normalization variant of an allowed path gets through.

/// The tool's scratch directory at the work-tree root: logs, JUnit files, the results table.
pub const SANDBOX: &str = "sandbox";

/// The paths of `changed` that the session may not change, in their order.
pub fn disallowed<'a>(changed: &'a [String], allowed: &[String]) -> Vec<&'a str> {
    changed
        .iter()
        .map(String::as_str)
        .filter(|path| {
            path.starts_with(&format!("{SANDBOX}/")) || !allowed.iter().any(|a| a == path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_allowed_paths_pass() {
        let allowed = vec!["src/k.py".to_string(), "sandbox/x".to_string()];
        let changed: Vec<String> = [
            "src/k.py",
            "src/K.py",
            "src/./k.py",
            "src/k.py ",
            "sandbox/x",
            "tests/t.py",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            disallowed(&changed, &allowed),
            [
                "src/K.py",
                "src/./k.py",
                "src/k.py ",
                "sandbox/x",
                "tests/t.py"
            ]
        );
    }
}
