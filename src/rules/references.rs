//! The seven reference guides of `references/`, embedded in the binary so that `refs` and `next` work
//! outside the repository.
//!
//! The markdown is the single source: `next` parses the catalog's "Priority order" section at run time
//! instead of keeping its own copy, so the text and the command cannot disagree. The conventions this
//! module relies on (one `# ` title, `## ` sections, playbook sections `## X. Title`, priority items
//! `1. **X** Title — why`) are checked by the tests below.

use crate::rules::kernel_class::KernelClass;

/// One embedded guide.
#[derive(Debug)]
pub struct Reference {
    /// Short name used on the command line: playbook, catalog, api, model, ir, patterns, json.
    pub name: &'static str,
    /// File name inside `references/`.
    pub file: &'static str,
    pub text: &'static str,
}

/// A guide of `references/`, embedded under its short name.
macro_rules! reference {
    ($name:literal, $file:literal) => {
        Reference {
            name: $name,
            file: $file,
            text: include_str!(concat!("../../references/", $file)),
        }
    };
}

static REFERENCES: [Reference; 7] = [
    reference!("playbook", "optimization-playbook.md"),
    reference!("catalog", "perf-knobs-catalog.md"),
    reference!("api", "cutile-api-reference.md"),
    reference!("model", "performance-model.md"),
    reference!("ir", "ir-dump-guide.md"),
    reference!("patterns", "cutile-patterns-reference.md"),
    reference!("json", "json-fields.md"),
];

pub fn all() -> &'static [Reference] {
    &REFERENCES
}

/// Looks a guide up by short name or file stem (with or without `.md`), ignoring case.
pub fn find(name: &str) -> Option<&'static Reference> {
    let key = name.trim();
    let key = key.strip_suffix(".md").unwrap_or(key);
    REFERENCES.iter().find(|r| {
        r.name.eq_ignore_ascii_case(key) || r.file.trim_end_matches(".md").eq_ignore_ascii_case(key)
    })
}

/// A markdown heading outside code fences: its level, title, and byte offset of its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Heading<'a> {
    level: usize,
    title: &'a str,
    start: usize,
}

fn headings(text: &str) -> Vec<Heading<'_>> {
    let mut out = Vec::new();
    let mut in_fence = false;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        if content.starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            let level = content.bytes().take_while(|&b| b == b'#').count();
            if level > 0 && content[level..].starts_with(' ') {
                out.push(Heading {
                    level,
                    title: content[level..].trim(),
                    start,
                });
            }
        }
        start += line.len();
    }
    out
}

/// Splits `X. Title` into (`X`, `Title`) when the part before the first ". " is one short token
/// (a playbook letter or an API rule number such as `R3`).
fn split_label(title: &str) -> Option<(&str, &str)> {
    let (label, rest) = title.split_once(". ")?;
    let short =
        !label.is_empty() && label.len() <= 3 && label.chars().all(|c| c.is_ascii_alphanumeric());
    short.then_some((label, rest))
}

fn heading_matches(title: &str, key: &str) -> bool {
    title.eq_ignore_ascii_case(key)
        || split_label(title).is_some_and(|(label, rest)| {
            label.eq_ignore_ascii_case(key) || rest.eq_ignore_ascii_case(key)
        })
}

/// The section whose heading is `key`, starts with `key.` (a letter or rule label), or whose title
/// equals `key`, all ignoring case. `## ` sections are searched first, deeper headings after, so
/// `section(catalog, "memory-bound")` finds the `### memory-bound` list. The result runs from the
/// heading line to just before the next heading of the same or a higher level (or the end), byte for
/// byte.
pub fn section<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let key = key.trim();
    if key.is_empty() {
        return None;
    }
    let hs = headings(text);
    let pick = |want: &dyn Fn(usize) -> bool| {
        hs.iter()
            .position(|h| want(h.level) && heading_matches(h.title, key))
    };
    let i = pick(&|l| l == 2).or_else(|| pick(&|l| l > 2))?;
    let h = hs[i];
    let end = hs[i + 1..]
        .iter()
        .find(|n| n.level <= h.level)
        .map_or(text.len(), |n| n.start);
    Some(&text[h.start..end])
}

/// Titles of the `## ` sections, in order (what `refs NAME` can offer as section keys).
pub fn section_titles(text: &str) -> Vec<&str> {
    headings(text)
        .into_iter()
        .filter(|h| h.level == 2)
        .map(|h| h.title)
        .collect()
}

/// Heading of a class's list in the catalog's "Priority order" section.
fn catalog_heading(class: KernelClass) -> &'static str {
    match class {
        KernelClass::Memory => "memory-bound",
        KernelClass::Balanced => "balanced",
        KernelClass::Compute => "compute-bound",
    }
}

/// One optimization to try, from the catalog's priority order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Suggestion {
    pub letter: String,
    pub title: String,
    pub why: String,
}

/// Parses `1. **B** Persistent scheduling — why it fits` into a suggestion.
fn parse_priority_item(line: &str) -> Option<Suggestion> {
    let (num, rest) = line.trim().split_once(". ")?;
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest.strip_prefix("**")?;
    let (letter, rest) = rest.split_once("**")?;
    let (title, why) = rest.split_once(" — ")?;
    Some(Suggestion {
        letter: letter.trim().to_string(),
        title: title.trim().to_string(),
        why: why.trim().to_string(),
    })
}

/// The catalog's priority order for `class`, in order.
pub fn priority_order(class: KernelClass) -> Vec<Suggestion> {
    let catalog = find("catalog").expect("catalog is embedded").text;
    section(catalog, "Priority order")
        .and_then(|s| section(s, catalog_heading(class)))
        .map(|s| s.lines().filter_map(parse_priority_item).collect())
        .unwrap_or_default()
}

/// The optimizations to try next for `class`, in the catalog's order, without the letters in
/// `tried` (compared ignoring case and surrounding spaces).
pub fn next_optimizations(class: KernelClass, tried: &[String]) -> Vec<Suggestion> {
    priority_order(class)
        .into_iter()
        .filter(|s| {
            !tried
                .iter()
                .any(|t| t.trim().eq_ignore_ascii_case(&s.letter))
        })
        .collect()
}

/// The playbook's optimizations as (letter, title), in order of appearance.
pub fn playbook_entries() -> Vec<(&'static str, &'static str)> {
    let playbook = find("playbook").expect("playbook is embedded").text;
    section_titles(playbook)
        .into_iter()
        .filter_map(split_label)
        .collect()
}

/// The playbook letter `flag` names (upper-cased), checked against the embedded playbook.
pub fn playbook_letter(opt: &str, flag: &str) -> anyhow::Result<String> {
    let letter = opt.trim().to_uppercase();
    let entries = playbook_entries();
    if entries.iter().any(|(l, _)| *l == letter) {
        return Ok(letter);
    }
    let letters: Vec<_> = entries.iter().map(|(l, _)| *l).collect();
    Err(crate::rules::hint::hinted(
        format!(
            "{flag} {opt:?} is not a playbook letter ({})",
            letters.join(", ")
        ),
        "`git cutile-perf refs playbook` lists them",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(name: &str) -> &'static str {
        find(name).unwrap().text
    }

    /// Sections each command and guide promises (besides the playbook letters, checked below).
    const PROMISED: &[(&str, &[&str])] = &[
        (
            "catalog",
            &[
                "Kernel hints",
                "Memory-operation knobs",
                "Math knobs",
                "Launch knobs",
                "Environment variables",
                "Per-architecture notes",
                "Priority order",
            ],
        ),
        (
            "api",
            &[
                "Kernels and launching",
                "Memory operations",
                "Matrix multiply",
                "Control flow and compile-time evaluation",
                "Tuning and compilation helpers",
                "Critical rules",
            ],
        ),
        (
            "model",
            &[
                "Roofline",
                "GPU peaks",
                "Arithmetic intensity by kernel type",
                "Diagnosis",
                "Autotuning method",
            ],
        ),
        (
            "ir",
            &[
                "Pipeline and caches",
                "Environment variables",
                "Reading Tile IR",
                "Compiler remarks",
                "Cubin and SASS",
                "Common compiler errors and fixes",
            ],
        ),
        (
            "patterns",
            &[
                "Triton to cuTile",
                "Persistent grid-stride loop",
                "Split reduction",
            ],
        ),
    ];

    const PLAYBOOK_SUBSECTIONS: [&str; 7] = [
        "When it applies",
        "Steps",
        "Before",
        "After",
        "Expected gain",
        "Risks",
        "How to verify",
    ];

    #[test]
    fn seven_references_found_by_short_name_and_stem() {
        assert_eq!(all().len(), 7);
        for r in all() {
            assert!(std::ptr::eq(find(r.name).unwrap(), r));
            assert!(std::ptr::eq(find(&r.name.to_uppercase()).unwrap(), r));
            assert!(std::ptr::eq(find(r.file).unwrap(), r));
            assert!(std::ptr::eq(
                find(r.file.trim_end_matches(".md")).unwrap(),
                r
            ));
            assert!(
                r.text.starts_with("# "),
                "{} must start with a # title",
                r.file
            );
            assert_eq!(
                headings(r.text).iter().filter(|h| h.level == 1).count(),
                1,
                "{}",
                r.file
            );
        }
        assert!(find("nope").is_none());
    }

    #[test]
    fn every_reference_has_its_promised_sections() {
        for (name, sections) in PROMISED {
            let titles = section_titles(text(name));
            for s in *sections {
                assert!(
                    titles.contains(s),
                    "{name} lacks section {s:?}; has {titles:?}"
                );
                assert!(section(text(name), s).is_some());
            }
        }
        let order = section(text("catalog"), "Priority order").unwrap();
        for c in KernelClass::ALL {
            assert!(
                section(order, catalog_heading(c)).is_some(),
                "no ### {}",
                catalog_heading(c)
            );
        }
    }

    #[test]
    fn playbook_letters_are_contiguous_from_a_with_all_subsections() {
        let entries = playbook_entries();
        assert!(entries.len() >= 12, "the playbook needs at least A-L");
        for (i, (letter, _)) in entries.iter().enumerate() {
            assert_eq!(*letter, ((b'A' + i as u8) as char).to_string());
        }
        // Every `## ` section after the introduction is a lettered optimization.
        assert_eq!(section_titles(text("playbook")).len(), entries.len());
        for (letter, _) in &entries {
            let body = section(text("playbook"), letter).unwrap();
            let subs: Vec<&str> = headings(body)
                .iter()
                .filter(|h| h.level == 3)
                .map(|h| h.title)
                .collect();
            assert_eq!(subs, PLAYBOOK_SUBSECTIONS, "playbook {letter}");
            for (sub, fence) in [("Before", "```python\n"), ("After", "```python\n")] {
                assert!(
                    section(body, sub).unwrap().contains(fence),
                    "playbook {letter} {sub} needs a python block"
                );
            }
        }
    }

    #[test]
    fn priority_orders_name_every_playbook_letter_once_with_its_title() {
        let entries = playbook_entries();
        for c in KernelClass::ALL {
            let order = priority_order(c);
            let mut letters: Vec<&str> = order.iter().map(|s| s.letter.as_str()).collect();
            letters.sort_unstable();
            let mut expected: Vec<&str> = entries.iter().map(|(l, _)| *l).collect();
            expected.sort_unstable();
            assert_eq!(
                letters, expected,
                "{c} order must name each playbook letter exactly once"
            );
            for s in &order {
                let (_, title) = entries.iter().find(|(l, _)| *l == s.letter).unwrap();
                assert_eq!(s.title, *title, "{c}: title of {}", s.letter);
                assert!(!s.why.is_empty());
            }
            // The custom plan comes after everything else.
            assert_eq!(order.last().unwrap().letter, entries.last().unwrap().0);
        }
    }

    #[test]
    fn section_b_of_the_playbook_is_exact() {
        let t = text("playbook");
        // Independent computation: line numbers of the B and C headings.
        let lines: Vec<&str> = t.split_inclusive('\n').collect();
        let b = lines.iter().position(|l| l.starts_with("## B. ")).unwrap();
        let c = lines.iter().position(|l| l.starts_with("## C. ")).unwrap();
        let expected: String = lines[b..c].concat();
        assert_eq!(section(t, "B").unwrap(), expected);
        assert_eq!(section(t, "b").unwrap(), expected);
        assert_eq!(section(t, "B. Persistent scheduling").unwrap(), expected);
        assert_eq!(section(t, "persistent scheduling").unwrap(), expected);
        assert!(expected.starts_with("## B. Persistent scheduling\n"));
        assert!(expected.ends_with("\n\n"));
    }

    #[test]
    fn last_section_runs_to_the_end_and_subsections_stop_at_their_sibling() {
        let t = text("playbook");
        let last = section(t, "L").unwrap();
        assert!(t.ends_with(last));
        let catalog = text("catalog");
        let memory = section(catalog, "memory-bound").unwrap();
        assert!(memory.starts_with("### memory-bound\n"));
        assert!(!memory.contains("### balanced"));
        let compute = section(catalog, "compute-bound").unwrap();
        assert!(catalog.ends_with(compute));
    }

    #[test]
    fn section_ignores_headings_inside_code_and_unknown_keys() {
        let t = "# T\n\n## A. One\n\n```python\n## B. not a heading\n```\n\n## B. Two\nbody\n";
        assert_eq!(
            section(t, "A").unwrap(),
            "## A. One\n\n```python\n## B. not a heading\n```\n\n"
        );
        assert_eq!(section(t, "B").unwrap(), "## B. Two\nbody\n");
        assert_eq!(section(t, "C"), None);
        assert_eq!(section(t, ""), None);
    }

    #[test]
    fn api_rules_number_at_least_eighteen_each_with_wrong_and_right() {
        let rules = section(text("api"), "Critical rules").unwrap();
        let labels: Vec<&str> = headings(rules)
            .iter()
            .filter(|h| h.level == 3)
            .filter_map(|h| split_label(h.title))
            .map(|(l, _)| l)
            .collect();
        assert!(labels.len() >= 18, "only {} rules", labels.len());
        for (i, label) in labels.iter().enumerate() {
            assert_eq!(*label, format!("R{}", i + 1));
            let body = section(rules, label).unwrap();
            assert!(
                body.contains("```python wrong\n"),
                "{label} lacks a wrong block"
            );
            assert!(body.contains("```python\n"), "{label} lacks a right block");
        }
    }

    #[test]
    fn python_fences_use_only_the_checker_info_strings() {
        for r in all() {
            for line in r.text.lines().filter(|l| l.starts_with("```python")) {
                assert!(
                    ["```python", "```python wrong", "```python fragment"].contains(&line),
                    "{}: unexpected fence {line:?}",
                    r.file
                );
            }
        }
    }

    #[test]
    fn next_follows_the_catalog_and_skips_tried_letters() {
        let all_memory = next_optimizations(KernelClass::Memory, &[]);
        assert_eq!(all_memory, priority_order(KernelClass::Memory));
        assert_eq!(all_memory[0].letter, "A");
        let tried = vec!["A".to_string(), " b ".to_string()];
        let rest = next_optimizations(KernelClass::Memory, &tried);
        assert_eq!(rest.len(), all_memory.len() - 2);
        assert!(rest.iter().all(|s| s.letter != "A" && s.letter != "B"));
        assert_eq!(rest[0], all_memory[2]);
        assert_eq!(
            next_optimizations(KernelClass::Compute, &[])[0].title,
            "TF32 for fp32 matrix multiply"
        );
        let every: Vec<String> = playbook_entries()
            .iter()
            .map(|(l, _)| l.to_string())
            .collect();
        assert!(next_optimizations(KernelClass::Balanced, &every).is_empty());
    }

    #[test]
    fn suggestions_serialize_with_their_field_names() {
        let s = &next_optimizations(KernelClass::Memory, &[])[0];
        let v = serde_json::to_value(s).unwrap();
        assert_eq!(v["letter"], "A");
        assert_eq!(v["title"], "TMA loads and stores instead of gather/scatter");
        assert!(
            v["why"]
                .as_str()
                .unwrap()
                .starts_with("bandwidth is the limit")
        );
        assert_eq!(
            serde_json::to_value(KernelClass::Compute).unwrap(),
            "compute"
        );
    }
}
