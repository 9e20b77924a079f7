//! What steps leave in the sandbox, kept to one step's size however long the session: each code's
//! kernel dumps and the workers' logs.

use std::path::PathBuf;

use crate::record::history::sandbox;
use crate::system::git::Repo;
use crate::system::workers::lasting;

/// Removes the dumps of every code but `tree`'s (the baseline's after a step: the next step compares its
/// candidate with them): what they gave is in the evidence notes, so the folder stays one code's size
/// however long the session.
pub fn prune_dumps(repo: &Repo, tree: &str) {
    let dir = sandbox(repo).join("dumps");
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if entry.file_name() != tree {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Removes the logs of the workers earlier commands started (`sandbox/worker-<side>-<pid>-<n>.log`), but
/// those of kept workers, which still write to theirs: this command's stay, for the reasons that name
/// them, until the next step, so the folder stays one step's size however long the session.
pub fn prune_worker_logs(repo: &Repo) {
    let kept: Vec<std::ffi::OsString> = (lasting::all(repo).into_iter().flatten())
        .filter_map(|(_, kept)| kept.log.file_name().map(ToOwned::to_owned))
        .collect();
    let this = std::process::id().to_string();
    for entry in std::fs::read_dir(sandbox(repo))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let started_by = name
            .strip_prefix("worker-")
            .and_then(|name| name.strip_suffix(".log"))
            .and_then(|home| home.rsplit('-').nth(1));
        if started_by.is_some_and(|pid| pid != this) && !kept.contains(&entry.file_name()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Where cuda-tile writes the kernels each side's runs compile: a folder per code, named by its tree,
/// so that a baseline's dumps belong to the code its worker holds, whichever step's worker wrote them.
pub fn dumps_of(repo: &Repo, tree: &str) -> PathBuf {
    sandbox(repo).join("dumps").join(tree)
}
