//! The inspector over every cuTile file of a real TileGym checkout (never committed here): run it with
//! `tools/inspect-tilegym.sh /path/to/TileGym`. Ignored by default: it needs the checkout.

use git_cutile_perf::features::inspect::module;

fn cutile_files(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.join("src/tilegym")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "py")
                && path.components().any(|c| c.as_os_str() == "cutile")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
#[ignore = "needs a TileGym checkout in $TILEGYM"]
fn every_cutile_file_of_tilegym_parses() {
    let root = std::path::PathBuf::from(
        std::env::var("TILEGYM").expect("set TILEGYM to a TileGym checkout"),
    );
    let files = cutile_files(&root);
    let (mut kernels, mut launches, mut unresolved, mut registrations, mut tunings, mut generators) =
        (0, 0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let package = rel
            .trim_start_matches("src/")
            .rsplit_once('/')
            .unwrap()
            .0
            .replace('/', ".");
        let text = std::fs::read_to_string(path).unwrap();
        match module::analyze(&text, &package, Some((9, 0))) {
            Ok(facts) => {
                kernels += facts.kernels.len();
                launches += facts.launches.len();
                for launch in facts.launches.iter().filter(|l| l.kernels.is_empty()) {
                    unresolved += 1;
                    println!(
                        "unresolved launch {rel}:{} in {}: {}",
                        launch.line, launch.wrapper, launch.kernel_expr
                    );
                }
                registrations += facts.registrations.len();
                tunings += facts.tunings.len();
                generators += facts.generators.len();
            }
            Err(err) => failures.push(format!("{rel}: {err}")),
        }
    }
    println!(
        "files {} parsed {} kernels {kernels} launches {launches} (kernel unresolved: {unresolved}) registrations {registrations} \
         tuning calls {tunings} config generators {generators}",
        files.len(),
        files.len() - failures.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}
