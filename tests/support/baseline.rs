//! The message of a baseline commit exactly as `start` writes it, for tests and benchmarks that need a
//! session without running pytest.

/// `kernel` and `test` are recorded as the session's; `allowed` as its `Cutile-Perf-Allow` paths
/// (JSON-quoted when they hold a newline, as `start` quotes them).
pub fn baseline_message(kernel: &str, test: &str, allowed: &[&str]) -> String {
    let mut message = format!(
        "cutile-perf: baseline 1.000000 ms\n\n\
         Cutile-Perf-Iteration: 0\nCutile-Perf-Optimization: baseline\n\
         Cutile-Perf-Latency-Ms: 1.000000\nCutile-Perf-Correctness: PASS\nCutile-Perf-Status: keep\n\
         Cutile-Perf-Baseline-Ms: 1.000000\nCutile-Perf-Change: +0.00%\nCutile-Perf-Decision: continue\n\
         Cutile-Perf-Reason: baseline\nCutile-Perf-Session: 1\n\
         Cutile-Perf-Kernel: {kernel}\nCutile-Perf-Test: {test}\n"
    );
    for path in allowed {
        let value = if path.contains('\n') {
            serde_json::to_string(path).unwrap()
        } else {
            path.to_string()
        };
        message.push_str(&format!("Cutile-Perf-Allow: {value}\n"));
    }
    message.push_str(
        "Cutile-Perf-Statistic: median\nCutile-Perf-Continue-Pct: 5\nCutile-Perf-Gain-Pct: 2\n\
         Cutile-Perf-Regression-Pct: 2\nCutile-Perf-Max-Iterations: 25\nCutile-Perf-Max-No-Gain: 2\n\
         Cutile-Perf-Python: python3\n",
    );
    message
}
