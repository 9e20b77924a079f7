//! What a change's diff adds that often signals a shortcut rather than a faster kernel: a note for the
//! step's report, not a gate.

/// What a change adds that often signals a shortcut rather than a faster kernel: calls into libraries
/// that do the work themselves, caches that remember results, and threads or processes of its own (work
/// beside the measured kernel, or under the other side's measurement). A note for the step's report, not a
/// gate: an honest change may have a reason for each. `diff` is a unified diff of the change.
pub fn shortcut_signs(diff: &str) -> Vec<String> {
    const LIBRARY_CALLS: &[(&str, &str)] = &[
        ("torch.matmul(", "a torch matrix multiply"),
        ("torch.mm(", "a torch matrix multiply"),
        ("torch.bmm(", "a torch matrix multiply"),
        ("torch.einsum(", "a torch einsum"),
        ("torch.nn.functional", "a torch.nn.functional op"),
        ("F.linear(", "a torch.nn.functional op"),
        ("F.softmax(", "a torch.nn.functional op"),
        ("F.rms_norm(", "a torch.nn.functional op"),
        ("F.layer_norm(", "a torch.nn.functional op"),
        (
            "F.scaled_dot_product_attention(",
            "a torch.nn.functional op",
        ),
        ("torch.ops.", "a torch operator"),
        ("cublas", "cuBLAS"),
        ("triton", "Triton"),
        ("cupy", "CuPy"),
        (
            "data_ptr()",
            "a key from a tensor's address (a cache of results?)",
        ),
        ("lru_cache", "a memoizing decorator"),
        ("@cache", "a memoizing decorator"),
        ("threading", "a thread of its own"),
        ("multiprocessing", "a process of its own"),
        ("subprocess", "a process of its own"),
        ("os.fork(", "a process of its own"),
        ("os.setsid(", "a process of its own"),
    ];
    let mut signs = Vec::new();
    for line in diff.lines() {
        let Some(added) = line.strip_prefix('+').filter(|_| !line.starts_with("+++")) else {
            continue;
        };
        let code = added.split('#').next().unwrap_or("");
        let mut found: Vec<&str> = LIBRARY_CALLS
            .iter()
            .filter(|(needle, _)| code.contains(needle))
            .map(|(_, what)| *what)
            .collect();
        if code.contains(" @ ") && !code.trim_start().starts_with('@') {
            found.push("a matrix multiply by `@` (torch's, not a cuTile kernel)");
        }
        let module_level = !code.starts_with(char::is_whitespace);
        if module_level
            && (code.trim_end().ends_with("= {}") || code.trim_end().ends_with("= dict()"))
        {
            found.push("a module-level dict (a cache of results?)");
        }
        for what in found {
            let sign = format!("{what}: `{}`", added.trim());
            if !signs.contains(&sign) {
                signs.push(sign);
            }
        }
    }
    signs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortcut_signs_name_what_the_change_adds() {
        let diff = "+++ b/src/k.py\n+_MEMO = {}\n+    key = (x.data_ptr(), mode)\n-    y = a @ b\n+    return a @ b  # fast\n+    z = torch.matmul(a, b)\n+@ct.kernel\n+    # torch.mm( in a comment\n";
        assert_eq!(
            shortcut_signs(diff),
            [
                "a module-level dict (a cache of results?): `_MEMO = {}`",
                "a key from a tensor's address (a cache of results?): `key = (x.data_ptr(), mode)`",
                "a matrix multiply by `@` (torch's, not a cuTile kernel): `return a @ b  # fast`",
                "a torch matrix multiply: `z = torch.matmul(a, b)`",
            ]
        );
        assert_eq!(
            shortcut_signs("+import threading\n+    subprocess.Popen(['burn'])\n"),
            [
                "a thread of its own: `import threading`",
                "a process of its own: `subprocess.Popen(['burn'])`",
            ]
        );
        assert!(shortcut_signs("+    TILE_SIZE = 256\n").is_empty());
    }
}
