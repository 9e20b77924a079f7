//! The inspector on a corpus written for it (`tests/data/inspect/`), and `inspect --json` on the fixture.

use crate::support;

use git_cutile_perf::features::inspect::{self, module};
use git_cutile_perf::features::locate::Kernel;

fn corpus(name: &str, capability: Option<(u32, u32)>) -> module::ModuleFacts {
    let text = std::fs::read_to_string(format!("tests/data/inspect/{name}")).unwrap();
    module::analyze(&text, "tilegym.ops.cutile", capability).unwrap()
}

fn summary(facts: &module::ModuleFacts) -> Vec<String> {
    facts
        .launches
        .iter()
        .map(|l| {
            format!(
                "{} {} {} -> {} grid {}",
                l.line,
                l.wrapper,
                l.kernel_expr,
                l.kernels.join("|"),
                l.grid
            )
        })
        .collect()
}

#[test]
fn every_spelling_of_the_api_and_every_alias_of_a_kernel() {
    let facts = corpus("spellings.py", None);
    let kernels: Vec<(String, usize, String, bool)> = facts
        .kernels
        .iter()
        .map(|k| {
            let options: Vec<String> = k.options.iter().map(|o| o.to_string()).collect();
            (k.name.clone(), k.line, options.join(","), k.mma)
        })
        .collect();
    assert_eq!(
        kernels,
        [
            ("plain".to_string(), 11, String::new(), false),
            (
                "hinted".to_string(),
                16,
                "occupancy=2,num_ctas=1".to_string(),
                true
            ),
            ("wrapped".to_string(), 25, "occupancy=4".to_string(), false),
        ]
    );
    assert_eq!(facts.kernels[0].tile_shapes, ["(64,)"]);
    assert_eq!(facts.kernels[1].dtypes, ["bfloat16", "float32"]);
    // a parameter takes what callers pass; a cache entry what was stored; an if/else both kernels
    assert_eq!(
        summary(&facts),
        [
            "29 _launch_on which -> wrapped grid grid",
            "39 pick chosen -> hinted|plain grid grid"
        ]
    );
    // a grid variable shows what it was last set to; a parameter has no value here
    assert_eq!(
        facts.launches[1].grid_value.as_deref(),
        Some("(x.shape[0], 1, 1)")
    );
    assert_eq!(facts.launches[0].grid_value, None);
    let ops: Vec<(&str, Option<&str>, &str)> = facts
        .registrations
        .iter()
        .map(|r| (r.op.as_str(), r.backend.as_deref(), r.function.as_str()))
        .collect();
    assert_eq!(
        ops,
        [
            ("spellings.op", Some("cutile"), "spellings_op"),
            ("spellings.cached", Some("cutile"), "spellings_cached")
        ]
    );
    // the op reaches the wrapper through a module-level alias of an autograd Function
    let (reached, _) = facts.reach(&["spellings_op"]);
    assert!(
        reached.contains("pick") && !reached.contains("cached"),
        "{reached:?}"
    );
}

#[test]
fn a_tuned_launch_and_the_branch_each_gpu_takes() {
    let facts = corpus("autotune.py", Some((9, 0)));
    assert_eq!(summary(&facts), ["33 run tuned -> tiled grid (1,)"]);
    let tuning = &facts.tunings[0];
    assert_eq!((tuning.line, tuning.space.as_str()), (30, "space"));
    assert_eq!(tuning.generators, ["_configs"]);
    assert_eq!(tuning.kernels, ["tiled"]);
    let generator = &facts.generators[0];
    assert_eq!(generator.fields, ["BLOCK", "num_ctas", "occupancy"]);
    let taken = |cc| -> Vec<Option<bool>> {
        corpus("autotune.py", cc).generators[0]
            .branches
            .iter()
            .map(|b| b.taken)
            .collect()
    };
    assert_eq!(taken(Some((9, 0))), [Some(false), Some(false), Some(true)]);
    assert_eq!(taken(Some((8, 0))), [Some(false), Some(true), Some(false)]);
    assert_eq!(taken(Some((12, 1))), [Some(true), Some(false), Some(false)]);
    assert_eq!(taken(None), [None, None, None]);
    let configs: Vec<(usize, Option<u64>, Option<usize>)> = generator
        .configs
        .iter()
        .map(|c| (c.line, c.count, c.branch))
        .collect();
    assert_eq!(
        configs,
        [
            (17, Some(1), Some(0)),
            (21, Some(6), Some(1)),
            (23, Some(1), Some(2)),
            (24, Some(1), Some(2))
        ]
    );
    assert_eq!(
        generator.configs[3].fields,
        "BLOCK=512, occupancy=1, num_ctas=2"
    );
}

#[test]
fn a_syntax_error_is_refused_with_its_line() {
    let text = std::fs::read_to_string("tests/data/inspect/broken.py").unwrap();
    let err = module::analyze(&text, "tilegym.ops.cutile", None).unwrap_err();
    // tree-sitter marks the whole definition that fails to parse
    assert_eq!(err.line, 4, "{err}");
    assert!(
        err.to_string().starts_with("syntax error at line 4"),
        "{err}"
    );
}

#[test]
fn an_expression_nested_beyond_what_python_parses_is_refused() {
    let depth = 100_000;
    let text = format!(
        "import cuda.tile as ct\n\nx = {}1{}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let err = module::analyze(&text, "tilegym.ops.cutile", None).unwrap_err();
    assert_eq!(err.line, 3, "{err}");
    assert!(
        err.to_string()
            .contains("nested more than 1000 levels deep, which Python does not parse"),
        "{err}"
    );
    // as deep as Python allows still reads
    let text = format!("x = {}1{}\n", "(".repeat(199), ")".repeat(199));
    module::analyze(&text, "tilegym.ops.cutile", None).unwrap();
}

#[test]
fn an_op_that_launches_an_imported_kernel_allows_its_file() {
    let kernel = Kernel {
        name: "split".into(),
        suite: "ops".into(),
        path: "src/tilegym/ops/cutile/split.py".into(),
    };
    let report = inspect::inspect(
        std::path::Path::new("tests/data/inspect/repo"),
        &kernel,
        None,
    )
    .unwrap();
    let allowed: Vec<&str> = report
        .allowed_paths
        .iter()
        .map(|p| p.path.as_str())
        .collect();
    assert_eq!(
        allowed,
        [
            "src/tilegym/ops/cutile/split.py",
            "src/tilegym/ops/cutile/reduce.py"
        ]
    );
    let launches: Vec<String> = report
        .launches
        .iter()
        .map(|l| format!("{}:{} {}", l.file, l.item.line, l.item.kernels.join("|")))
        .collect();
    assert_eq!(
        launches,
        [
            "src/tilegym/ops/cutile/split.py:17 tilegym.ops.cutile.reduce._reduce_kernel",
            "src/tilegym/ops/cutile/split.py:24 _split_kernel",
            "src/tilegym/ops/cutile/reduce.py:12 _reduce_kernel",
        ]
    );
    assert_eq!(
        report.registrations[0].wrappers,
        [
            "src/tilegym/ops/cutile/split.py:24 split",
            "src/tilegym/ops/cutile/reduce.py:12 reduce"
        ]
    );
    let class = report.class.unwrap();
    assert_eq!((class.class.as_str(), class.source), ("memory", "static"));
}

#[test]
fn inspect_json_on_the_fixture() {
    let fixture = support::Fixture::new();
    let out = fixture.ok(&["inspect", "vector_add", "--json", "--capability", "9.0"]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["file"], "src/tilegym/ops/cutile/vector_add.py");
    assert_eq!(json["capability"], "9.0");
    assert_eq!(json["kernels"][0]["name"], "vector_add_kernel");
    assert_eq!(json["test"]["path"], "tests/ops/test_vector_add.py");
    assert_eq!(json["test"]["rule"], "named test_vector_add.py");
    assert_eq!(json["class"]["class"], "memory");
    assert_eq!(
        json["source"],
        serde_json::json!({"kind": "test_perf", "path": "tests/ops/test_vector_add.py", "configs": 2})
    );
    assert_eq!(json["measured_by"], "test_perf");
    // what times a kernel, in the words `inspect --all` uses, and the way to start in the text
    let scale =
        |args: &[&str]| fixture.ok(&[&["inspect", "scale", "--suite", "liger"], args].concat());
    let scaled: serde_json::Value = serde_json::from_str(&scale(&["--json"])).unwrap();
    assert_eq!(scaled["measured_by"], "correctness_only");
    assert!(
        scale(&[]).contains(
            "measured by: nothing, as its tests check correctness only: `git cutile-perf start scale \
             --suite liger --scaffold` writes a perf file to time it"
        ),
        "{}",
        scale(&[])
    );
    let swish = fixture.ok(&["inspect", "swish"]);
    assert!(
        swish.contains("measured by: the standalone benchmark"),
        "{swish}"
    );
    assert!(!swish.contains("--test"), "a plain start times it: {swish}");
    let all: serde_json::Value =
        serde_json::from_str(&fixture.ok(&["inspect", "--all", "--json"])).unwrap();
    let classes: Vec<String> = all["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| format!("{} {} {}", k["suite"], k["kernel"], k["measured_by"]))
        .collect();
    assert_eq!(
        classes,
        [
            r#""ops" "helpers" "no_test""#,
            r#""ops" "rms_norm" "no_test""#,
            r#""ops" "swish" "benchmark""#,
            r#""ops" "vector_add" "test_perf""#,
            r#""liger" "layer_norm" "correctness_only""#,
            r#""liger" "rms_norm" "correctness_only""#,
            r#""liger" "scale" "correctness_only""#,
        ]
    );
    assert_eq!(
        json["allowed_paths"][0]["path"],
        "src/tilegym/ops/cutile/vector_add.py"
    );
    let err = fixture.fails(&["inspect", "vector_add", "--capability", "nine"]);
    assert!(
        err.contains("invalid compute capability") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn start_prints_the_plan_records_the_static_class_and_next_answers() {
    let fixture = support::Fixture::new();
    let out = fixture.ok_all(&["start", "vector_add"]);
    assert!(
        out.contains("plan (read from the source by `inspect`)"),
        "{out}"
    );
    let log = fixture.git(&[
        "log",
        "-1",
        "--format=%(trailers:key=Cutile-Perf-Class,valueonly)",
    ]);
    assert_eq!(log.trim(), "memory");
    let next: serde_json::Value = serde_json::from_str(&fixture.ok(&["next", "--json"])).unwrap();
    assert_eq!(next["class"], "memory");
}

#[test]
fn deny_removes_a_found_path_and_cannot_remove_them_all() {
    let fixture = support::Fixture::new();
    let err = fixture.fails(&[
        "start",
        "vector_add",
        "--deny",
        "src/tilegym/ops/cutile/vector_add.py",
    ]);
    assert!(
        err.contains("--deny removed every allowed path") && err.contains("hint:"),
        "{err}"
    );
    fixture.ok(&[
        "start",
        "vector_add",
        "--allow",
        "src/tilegym/ops/cutile/rms_norm.py",
        "--deny",
        "src/tilegym/ops/cutile/vector_add.py",
    ]);
    let status: serde_json::Value =
        serde_json::from_str(&fixture.ok(&["status", "--json"])).unwrap();
    assert_eq!(
        status["session"]["allowed"],
        serde_json::json!(["src/tilegym/ops/cutile/rms_norm.py"])
    );
}

#[test]
fn measure_profiles_the_perf_case_with_ncu_and_classifies_by_it() {
    let fixture = support::Fixture::new();
    let err = fixture.fails(&["inspect", "vector_add", "--measure"]);
    assert!(
        err.contains("ncu is not on PATH") && err.contains("hint:"),
        "{err}"
    );
    let fake = std::fs::canonicalize("tests/data/inspect/fake-ncu").unwrap();
    let out = fixture
        .command(&["inspect", "vector_add", "--measure", "--json"])
        .env(
            "PATH",
            format!("{}:{}", fake.display(), *support::SEARCH_PATH),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["measured"]["kernel"], "vector_add_kernel");
    assert_eq!(json["measured"]["intensity"], 1.0);
    assert_eq!(json["measured"]["dram_gb_s"], 1000.0);
    assert_eq!(json["class"]["class"], "memory");
    assert_eq!(json["class"]["source"], "measured");
    let called = std::fs::read_to_string(fixture.path("sandbox/ncu.csv.args")).unwrap();
    let called: Vec<&str> = called.lines().collect();
    assert!(called.contains(&"regex:vector_add_kernel"), "{called:?}");
    assert!(
        called.contains(&"tests/ops/test_vector_add.py"),
        "{called:?}"
    );
    assert!(called.contains(&"test_perf and cutile"), "{called:?}");
    assert!(called.contains(&"TILEGYM_DISABLE_AUTOTUNE=1"), "{called:?}");
    // autotune searches paused under the profiler, as in `diagnose`
    assert!(called.contains(&"cutile_perf_pause_tuning"), "{called:?}");
    assert!(fixture.path("sandbox/cutile_perf_pause_tuning.py").exists());

    // a launch where ncu counted no FLOP (matmul's tensor ops on the H200) keeps the static estimate
    let out = fixture
        .command(&["inspect", "vector_add", "--measure", "--json"])
        .env(
            "PATH",
            format!("{}:{}", fake.display(), *support::SEARCH_PATH),
        )
        .env("FAKE_NCU_FMA", "0")
        .output()
        .unwrap();
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["class"]["source"], "static");
    assert!(String::from_utf8_lossy(&out.stderr).contains("counted no DRAM bytes or no FLOP"));
}
