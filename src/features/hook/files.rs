//! The hooks directory's files, as both hooks handle them: whether one is there, a foreign hook set
//! aside, our script written whole.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{Context, Result};

/// Renames a foreign hook to `saved`, where our script runs it from; refuses when `saved` is taken.
pub(super) fn set_aside(hook: &Path, saved: &Path) -> Result<()> {
    if exists(saved)? {
        let name = |p: &Path| {
            p.file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned())
        };
        return Err(crate::rules::hint::hinted(
            format!(
                "both {} and {} exist, and neither is ours; refusing to touch either",
                hook.display(),
                saved.display()
            ),
            format!(
                "keep the one you want as {} and remove {}",
                name(hook),
                name(saved)
            ),
        ));
    }
    fs::rename(hook, saved).with_context(|| format!("cannot move {} aside", hook.display()))
}

pub(super) fn write_script(path: &Path, script: &str) -> Result<()> {
    // Written beside the target and renamed over it, so a failure never leaves half a hook.
    let temp = path.with_extension("cutile-perf-tmp");
    fs::write(&temp, script).with_context(|| format!("cannot write {}", temp.display()))?;
    fs::set_permissions(&temp, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", temp.display()))?;
    fs::rename(&temp, path).with_context(|| format!("cannot install {}", path.display()))
}

/// Whether `path` exists as anything, a dangling symlink included.
pub(super) fn exists(path: &Path) -> Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}
