//! What GPU the session runs on, as `nvidia-smi` reports it.

use std::time::Duration;

use crate::process;

/// nvidia-smi answers in well under a second; a wedged driver must not hang `start`.
const TIMEOUT: Duration = Duration::from_secs(15);

/// `name, compute capability, driver` of the first GPU, or `None` without nvidia-smi or a GPU.
pub fn detect() -> Option<String> {
    let output = process::capture(
        process::command(
            "nvidia-smi",
            &[
                "--query-gpu=name,compute_cap,driver_version",
                "--format=csv,noheader",
            ],
        ),
        TIMEOUT,
    )
    .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    (output.success() && !first.is_empty()).then(|| first.to_string())
}
