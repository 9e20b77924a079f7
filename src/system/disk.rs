//! How much room a file system has left: a step writes worktrees, pytest's JUnit files and notes, and a
//! disk that fills while it runs leaves files empty that would read as results. And files written whole,
//! for processes that may read them as they are written.

use std::path::Path;

use anyhow::{Context, Result};

use crate::rules::hint::hinted;

/// The least free space a step starts with: its worktree, JUnit files, logs and note, with room over.
pub const LEAST_FREE: u64 = 64 << 20;

/// The bytes an unprivileged process may still write on the file system holding `path`; `None` where
/// the system cannot say.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: a NUL-terminated path and a buffer of the size statvfs(3) fills
    if unsafe { libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it filled the buffer
    let stat = unsafe { stat.assume_init() };
    Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
}

/// Writes `bytes` into `path` whole: beside it first, then renamed over it, so that a process reading it
/// meanwhile finds the old file or the new one, never a part. Each write has a part of its own: two
/// threads may write the same file (the GPUs' cold runs, their plugins).
pub fn write_whole(path: &Path, bytes: impl AsRef<[u8]>) -> Result<()> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let part = path.with_extension(format!("{}-{write}.part", std::process::id()));
    std::fs::write(&part, bytes).with_context(|| format!("cannot write {}", part.display()))?;
    if let Err(e) = std::fs::rename(&part, path) {
        let _ = std::fs::remove_file(&part);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// Refuses `what` when the file system holding `dir` has less than [`LEAST_FREE`] left.
pub fn refuse_full(dir: &Path, what: &str) -> Result<()> {
    match free_bytes(dir) {
        Some(free) => refusal(free, dir, what),
        None => Ok(()),
    }
}

fn refusal(free: u64, dir: &Path, what: &str) -> Result<()> {
    if free >= LEAST_FREE {
        return Ok(());
    }
    Err(hinted(
        format!(
            "the disk holding {} has {} KiB free: {what} needs at least {} MiB for its test results and \
             record",
            dir.display(),
            free >> 10,
            LEAST_FREE >> 20
        ),
        "free some space on that disk (`df -h` shows it; old `sandbox/` logs and pytest caches can go), \
         then run it again; nothing was changed",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nearly_full_disk_is_refused_with_what_to_do() {
        let dir = Path::new("/repo/.git");
        let err = refusal(LEAST_FREE - 1, dir, "a step").unwrap_err();
        let shown = crate::rules::hint::shown(&err);
        assert!(
            shown.starts_with("the disk holding /repo/.git has 65535 KiB free: a step needs"),
            "{shown}"
        );
        assert!(shown.contains("\nhint: free some space"), "{shown}");
        assert!(refusal(LEAST_FREE, dir, "a step").is_ok());
        assert!(free_bytes(Path::new(".")).is_some());
    }
}
