//! What GPU the session runs on, as `nvidia-smi` reports it.

use crate::process;

/// `name, compute capability, driver` of the first GPU, or `None` without nvidia-smi or a GPU.
pub fn detect() -> Option<String> {
    let output = process::command(
        "nvidia-smi",
        &[
            "--query-gpu=name,compute_cap,driver_version",
            "--format=csv,noheader",
        ],
    )
    .stdout_capture()
    .stderr_null()
    .unchecked()
    .run()
    .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let first = text.lines().next()?.trim();
    (output.status.success() && !first.is_empty()).then(|| first.to_string())
}
