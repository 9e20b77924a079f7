//! The Agent Skill: its frontmatter, links and evals in the format agents read, every command it names
//! checked against the command line's own definition, and installing it into a session's checkout
//! without disturbing the session.

use crate::support;

use clap::CommandFactory;
use git_cutile_perf::rules::references;
use git_cutile_perf::verbs::agent::skill::{FILES, NAME};
use git_cutile_perf::verbs::cli::Cli;
use support::{Fixture, KERNEL};

fn skill_md() -> &'static str {
    FILES[0].1
}

/// The frontmatter's lines and the body.
fn frontmatter() -> (Vec<(&'static str, &'static str)>, &'static str) {
    let (front, body) = skill_md()
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n"))
        .expect("SKILL.md opens with a --- frontmatter block");
    let top_level = front
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_once(':').expect("key: value"))
        .map(|(k, v)| (k, v.trim()))
        .collect();
    (top_level, body)
}

#[test]
fn frontmatter_follows_the_agent_skills_format() {
    let (keys, body) = frontmatter();
    let names: Vec<&str> = keys.iter().map(|(k, _)| *k).collect();
    assert_eq!(names, ["name", "description", "license", "metadata"]);
    let name = keys[0].1;
    assert_eq!(name, NAME, "the name is the folder's");
    assert!((1..=64).contains(&name.len()));
    assert!(
        name.split('-').all(|part| !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
        "lowercase letters, digits and single hyphens: {name}"
    );
    let description = keys[1].1;
    assert!((1..=1024).contains(&description.chars().count()));
    assert!(description.contains("Use when"), "says when to use it");
    // a body an agent reads in a few thousand tokens
    let words = body.split_whitespace().count();
    assert!((800..=3000).contains(&words), "{words} words");
    assert!(body.lines().count() < 500);
}

#[test]
fn links_lead_to_files_of_the_skill() {
    let text = skill_md();
    let mut links = 0;
    for (i, _) in text.match_indices("](") {
        let target = &text[i + 2..i + 2 + text[i + 2..].find(')').unwrap()];
        assert!(
            FILES.iter().any(|(path, _)| *path == target),
            "{target} is not a file of the skill"
        );
        links += 1;
    }
    assert!(links > 0);
}

/// Every `git cutile-perf ...` command in the text, as its words (up to a shell separator).
fn commands(text: &str) -> Vec<Vec<String>> {
    text.match_indices("git cutile-perf ")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            let end = rest.find(['`', '\n', '|', ';', ')']).unwrap_or(rest.len());
            rest[..end]
                .split_whitespace()
                .map(|w| w.trim_matches(['[', ']', ',', '.']).to_string())
                .filter(|w| !w.is_empty())
                .collect()
        })
        .collect()
}

fn long_flags(command: &clap::Command) -> Vec<String> {
    command
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .chain(["--help".to_string()])
        .collect()
}

#[test]
fn every_verb_and_flag_the_skill_names_exists() {
    // built: clap adds the `help` verb then
    let mut cli = Cli::command();
    cli.build();
    let (_, text) = frontmatter();
    let found = commands(text);
    assert!(found.len() > 20, "{found:?}");
    let mut every_flag: Vec<String> = Vec::new();
    for sub in cli.get_subcommands() {
        every_flag.extend(long_flags(sub));
    }
    // `-h` and `--help` are the tool's own; `<verb>` stands for any verb
    for words in found
        .iter()
        .filter(|w| !["-h", "--help", "<verb>"].contains(&w[0].as_str()))
    {
        let mut verb = cli
            .find_subcommand(&words[0])
            .unwrap_or_else(|| panic!("`git cutile-perf {}` is no verb", words.join(" ")));
        // a sub-verb (`campaign next`) has options of its own
        if let Some(sub) = words.get(1).and_then(|word| verb.find_subcommand(word)) {
            verb = sub;
        }
        let flags = long_flags(verb);
        for word in words.iter().filter(|w| w.starts_with("--")) {
            let flag = word.split('=').next().unwrap();
            assert!(
                flags.iter().any(|f| f == flag),
                "`git cutile-perf {}`: {flag} is not an option of {}",
                words.join(" "),
                words[0]
            );
        }
        if words[0] == "refs"
            && let Some(name) = words
                .get(1)
                .filter(|n| n.chars().all(|c| c.is_ascii_lowercase()))
        {
            let guide = references::find(name).unwrap_or_else(|| panic!("no guide {name}"));
            if let Some(section) = words.get(2) {
                assert!(
                    references::section(guide.text, section).is_some(),
                    "`refs {name} {section}` finds nothing"
                );
            }
        }
    }
    // a flag named alone (`--continue`, `--filter`) belongs to some verb
    for (i, _) in text.match_indices("`--") {
        let flag: String = text[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(every_flag.contains(&flag), "{flag} is no option");
    }
    // every guide is reachable from the skill
    for guide in references::all() {
        assert!(
            text.contains(&format!("git cutile-perf refs {}", guide.name)),
            "the skill never names `refs {}`",
            guide.name
        );
    }
}

#[test]
fn the_skill_teaches_skips_variants_and_what_a_change_compares() {
    let (_, text) = frontmatter();
    let skip = ["next", "--json", "--skip", "A", "--why"].map(String::from);
    assert!(
        commands(text).iter().any(|words| words.starts_with(&skip)),
        "the skill never shows `next --skip`"
    );
    for field in [
        "`skipped`",
        "`variants`",
        "`variant_of`",
        "`change_against`",
        "`session.class_source`",
        "`class_measure_s`",
        "`compile_facts_s`",
        "`shortcut_signs`",
        "`best`",
        "`resume`",
        "`budget_used_pct`",
    ] {
        assert!(text.contains(field), "the skill never names {field}");
    }
}

#[test]
fn evals_hold_positive_and_negative_prompts_with_expected_behaviours() {
    let evals: serde_json::Value = serde_json::from_str(FILES[1].1).unwrap();
    let evals = evals.as_array().unwrap();
    let mut ids: Vec<&str> = evals.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), evals.len(), "ids are unique");
    let (mut positive, mut negative) = (0, 0);
    for e in evals {
        assert!(!e["question"].as_str().unwrap().is_empty());
        assert!(!e["ground_truth"].as_str().unwrap().is_empty());
        assert!(!e["expected_behavior"].as_array().unwrap().is_empty());
        if e["should_trigger"] == false {
            assert!(e["expected_skill"].is_null(), "{e}");
            negative += 1;
        } else {
            assert_eq!(e["expected_skill"], NAME, "{e}");
            positive += 1;
        }
    }
    assert!(
        positive >= 3 && negative >= 2,
        "{positive} positive, {negative} negative"
    );
}

#[test]
fn print_is_the_skill_md() {
    let f = Fixture::empty();
    assert_eq!(f.ok(&["skill"]), skill_md());
    assert_eq!(f.ok(&["skill", "--print"]), skill_md());
    let json: serde_json::Value = serde_json::from_str(&f.ok(&["skill", "--json"])).unwrap();
    assert_eq!(
        (json["name"].as_str(), json["skill_md"].as_str()),
        (Some(NAME), Some(skill_md()))
    );
    let err = f.fails(&["skill", "--user"]);
    assert!(err.contains("--install"), "{err}");
}

/// A checkout shaped like TileGym's: `.claude/skills` and `.agents/skills` are tracked links to the
/// tracked `skills/`.
fn with_skill_links(f: &Fixture) {
    f.write(
        "skills/other/SKILL.md",
        "---\nname: other\ndescription: another skill\n---\n",
    );
    for dir in [".claude", ".agents"] {
        std::fs::create_dir_all(f.path(dir)).unwrap();
        std::os::unix::fs::symlink("../skills", f.path(&format!("{dir}/skills"))).unwrap();
    }
    f.git(&["add", "-A"]);
    f.git(&["commit", "-q", "-m", "skills"]);
}

#[test]
fn installed_in_a_session_checkout_it_leaves_the_tree_clean_and_the_loop_running() {
    let f = Fixture::new();
    with_skill_links(&f);
    f.start();
    let report: serde_json::Value =
        serde_json::from_str(&f.ok(&["skill", "--install", "--json"])).unwrap();
    let installed = report["installed"].as_array().unwrap();
    assert_eq!(installed.len(), 1, "both links lead to skills/: {report}");
    assert_eq!(installed[0]["excluded"], format!("/skills/{NAME}/"));
    assert_eq!(
        std::fs::read_to_string(f.path(&format!(".claude/skills/{NAME}/SKILL.md"))).unwrap(),
        skill_md()
    );
    assert!(
        f.path(&format!(".agents/skills/{NAME}/evals/evals.json"))
            .exists()
    );
    assert_eq!(f.status(), "");
    // installing again replaces its own files, and the session goes on
    f.ok(&["skill", "--install", "--project"]);
    f.set_latency(0.09, 0.9);
    let r = f.step_json(&["tile size 256"]);
    assert_eq!(r["status"], "keep", "{r}");
    assert_eq!(
        f.git(&["diff", "--name-only", "HEAD~1", "HEAD"]),
        format!("{KERNEL}\n")
    );
    f.ok(&["verify"]);
}

#[test]
fn installed_without_links_each_folder_is_excluded() {
    let f = Fixture::new();
    let out = f.ok(&["skill", "--install"]);
    assert!(
        out.contains(&format!("/.claude/skills/{NAME}/ in .git/info/exclude")),
        "{out}"
    );
    assert!(
        out.contains(&format!("/.agents/skills/{NAME}/ in .git/info/exclude")),
        "{out}"
    );
    assert_eq!(f.status(), "");
}

#[test]
fn a_tracked_folder_of_the_same_name_is_refused() {
    let f = Fixture::new();
    f.write(&format!(".claude/skills/{NAME}/notes.md"), "mine\n");
    f.git(&["add", "-A"]);
    f.git(&["commit", "-q", "-m", "tracked"]);
    let err = f.fails(&["skill", "--install"]);
    assert!(
        err.contains("the checkout tracks files in .claude/skills/git-cutile-perf"),
        "{err}"
    );
    assert!(
        err.contains("hint: install it with --user or --dir DIR"),
        "{err}"
    );
    assert_eq!(f.status(), "");
}

#[test]
fn user_and_dir_installs_write_outside_any_checkout() {
    let f = Fixture::empty();
    let home = f.root.parent().unwrap().join("home");
    let out = f.ok(&["skill", "--install", "--user"]);
    for dir in [".claude/skills", ".agents/skills"] {
        let skill = home.join(dir).join(NAME).join("SKILL.md");
        assert_eq!(std::fs::read_to_string(&skill).unwrap(), skill_md());
        assert!(
            out.contains(&skill.parent().unwrap().display().to_string()),
            "{out}"
        );
    }
    assert!(!out.contains("exclude"), "{out}");
    let elsewhere = f.root.join("my skills");
    f.ok(&["skill", "--install", "--dir", elsewhere.to_str().unwrap()]);
    assert!(elsewhere.join(NAME).join("evals/evals.json").exists());
    let err = f.fails(&["skill", "--install", "--project"]);
    assert!(err.contains("--project needs a git checkout"), "{err}");
}

#[test]
fn the_skill_says_where_help_and_the_fields_are_and_when_to_ask() {
    let (_, body) = frontmatter();
    for said in [
        "`git cutile-perf help <verb>`",
        "`git cutile-perf <verb> -h`",
        "needs nothing installed",
        "`git cutile-perf refs json`",
        "`--opt none`",
        "When the request answers all five, ask nothing",
    ] {
        assert!(body.contains(said), "the skill does not say {said:?}");
    }
}
