//! What GPU the session runs on, as `nvidia-smi` reports it.

use std::time::Duration;

use crate::process;

/// nvidia-smi answers in well under a second (through srun too); a wedged driver must not hang `start`.
const TIMEOUT: Duration = Duration::from_secs(15);

/// nvidia-smi's arguments for `name, compute capability, driver` without a header.
pub const QUERY: [&str; 2] = [
    "--query-gpu=name,compute_cap,driver_version",
    "--format=csv,noheader",
];

/// `name, compute capability, driver` of the first GPU, or `None` without nvidia-smi or a GPU.
pub fn detect() -> Option<String> {
    read(process::command("nvidia-smi", &QUERY))
}

/// The first GPU's line from an nvidia-smi `QUERY` command (local, or through a runner).
pub fn read(nvidia_smi: duct::Expression) -> Option<String> {
    let output = process::capture(nvidia_smi, TIMEOUT).ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    (output.success() && !first.is_empty()).then(|| first.to_string())
}
