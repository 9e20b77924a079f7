//! `diagnose::cause_for`, what `step` calls after its verdict: it profiles the change as the work tree
//! holds it. It sets this process's PATH (to the stand-in ncu of `tests/data/diagnose/`), holding it
//! ([`ProcessEnvironment`]) so that no other test sees it.

use crate::support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use git_cutile_perf::features::diagnose::case::Place;
use git_cutile_perf::features::diagnose::profile::cause_for;
use git_cutile_perf::record::history::{self, Configs};
use git_cutile_perf::rules::decision::Cause;
use git_cutile_perf::system::git::Repo;
use git_cutile_perf::system::runner::Local;
use support::*;

#[test]
fn the_uncommitted_change_is_what_gets_diagnosed() {
    let fixture = Fixture::new();
    fixture.start();
    let repo = Repo::discover(&fixture.root).unwrap();
    let history = history::read(&repo, Configs::CurrentBaseline)
        .unwrap()
        .unwrap();

    let no_ncu: Vec<PathBuf> = std::env::split_paths(&*SEARCH_PATH)
        .filter(|d| !d.join("ncu").exists())
        .collect();
    let path = ProcessEnvironment::hold();
    path.set_path(no_ncu.clone());
    let later = Instant::now() + Duration::from_secs(300);
    let said = Captured::default();
    let progress = said.progress();
    let local = Place {
        runner: &Local,
        gpu: None,
        progress: &progress,
    };
    assert!(
        cause_for(&repo, &local, &history, later).unwrap().is_none(),
        "no ncu, no diagnosis"
    );

    let ncu = fixture.root.parent().unwrap().join("ncu-bin");
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/diagnose"),
        &ncu,
    );
    let mut with = vec![ncu];
    with.extend(no_ncu);
    path.set_path(with);
    assert!(
        cause_for(
            &repo,
            &local,
            &history,
            Instant::now() + Duration::from_secs(10)
        )
        .unwrap()
        .is_none(),
        "too little budget left"
    );
    assert_eq!(
        said.text(),
        "no diagnosis: the step's budget is nearly spent\n"
    );

    fixture.edit_kernel("TILE_SIZE = 128", "TILE_SIZE = 256");
    let profiled = cause_for(&repo, &local, &history, later).unwrap().unwrap();
    assert!(
        said.text()
            .contains(&format!("diagnosing {} with ncu ...", profiled.config)),
        "the step's progress sink hears of the profile: {}",
        said.text()
    );
    assert_eq!(profiled.diagnosis.cause, Cause::Memory);
    // the stand-in's numbers for the edited kernel
    assert_eq!(profiled.diagnosis.profile.dram_pct, Some(86.0));
    assert!(profiled.config.ends_with("large]"), "{}", profiled.config);
    assert!(
        fixture.status().contains("vector_add.py"),
        "the change is left as it was"
    );
}
