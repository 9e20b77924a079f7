//! Man pages and shell completions, generated from the clap definition in `cli/` so they cannot
//! disagree with the binary (ripgrep and git-perf do the same). The committed copies in `man/` and
//! `completions/` are checked against this module by `tests/extras.rs`.
//!
//! Everything here is a pure function of the CLI: no date, and the version without the commit, so the
//! files change only when the command line does.

use clap::CommandFactory;

use crate::verbs::cli::{Cli, Shell};

/// The name git runs for `git cutile-perf`, which names the pages and completion files.
pub const BIN: &str = "git-cutile-perf";

/// The name the bash script is generated for: clap_complete mis-completes options of hyphenated
/// binary names (clap #6421, #6529), so the script is written for this name and the functions that
/// git and bash call (`_git_cutile_perf`, the completion of `git-cutile-perf`) forward to it.
const BASH_INNER: &str = "gitcutileperf";

/// One generated file: its name (no directory) and contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub name: String,
    pub contents: String,
}

/// The command line as the generated files see it.
fn command() -> clap::Command {
    Cli::command().version(env!("CARGO_PKG_VERSION"))
}

/// `git-cutile-perf.1` and one `git-cutile-perf-<verb>.1` per visible verb.
pub fn man_pages() -> Vec<Generated> {
    let mut cmd = command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = vec![render_page(&cmd)];
    pages.extend(
        cmd.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(render_page),
    );
    pages
}

/// The page of one verb, or the tool's page for `None`.
pub fn man_page(verb: Option<&str>) -> Option<Generated> {
    let wanted = match verb {
        Some(verb) => format!("{BIN}-{verb}.1"),
        None => format!("{BIN}.1"),
    };
    man_pages().into_iter().find(|page| page.name == wanted)
}

/// Whether a file name is one of ours in a man1 directory (current or from an older version).
pub fn is_our_man_page(name: &str) -> bool {
    name.ends_with(".1") && (name == format!("{BIN}.1") || name.starts_with(&format!("{BIN}-")))
}

fn render_page(cmd: &clap::Command) -> Generated {
    // Subcommands of a built command are named git-cutile-perf-<verb>, with the synopsis
    // `git cutile-perf <verb>` (the parent's bin_name). No date, so no drift from one day to the
    // next (clap_mangen then drops the empty field and man shows the source where the date goes).
    let man =
        clap_mangen::Man::new(cmd.clone()).source(format!("{BIN} {}", env!("CARGO_PKG_VERSION")));
    let mut roff = Vec::new();
    man.render(&mut roff)
        .expect("rendering to memory cannot fail");
    Generated {
        name: man.get_filename(),
        contents: String::from_utf8(roff).expect("roff output is UTF-8"),
    }
}

/// The file name a shell's script is committed and written under.
pub fn completion_file_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "git-cutile-perf.bash",
        Shell::Zsh => "_git-cutile-perf",
        Shell::Fish => "git-cutile-perf.fish",
    }
}

pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

pub fn completion(shell: Shell) -> Generated {
    let contents = match shell {
        Shell::Bash => bash(),
        Shell::Zsh => clap_script(clap_complete::Shell::Zsh, BIN),
        // fish's own git completion hands `git cutile-perf ...` to the completions of the
        // `git-cutile-perf` command found on PATH, so the plain script serves both forms.
        Shell::Fish => clap_script(clap_complete::Shell::Fish, BIN),
    };
    Generated {
        name: completion_file_name(shell).to_string(),
        contents,
    }
}

fn clap_script(shell: clap_complete::Shell, name: &str) -> String {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command(), name, &mut out);
    String::from_utf8(out).expect("completion scripts are UTF-8")
}

/// How `git-cutile-perf` itself registers, as clap_complete registers its own name.
const BASH_REGISTER: &str = r#"if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _gitcutileperf -o nosort -o bashdefault -o default git-cutile-perf
else
    complete -F _gitcutileperf -o bashdefault -o default git-cutile-perf
fi
"#;

/// git's completion (contrib/completion/git-completion.bash) calls `_git_cutile_perf`, with no
/// arguments, for `git [global options] cutile-perf ...<TAB>`; the words before `cutile-perf` are
/// dropped so the generated function sees a command line of its own.
const BASH_GIT_ENTRY: &str = r#"
# `git cutile-perf <TAB>`: git's completion calls _git_cutile_perf (loading this file on demand through
# bash-completion, which looks for completions/git-cutile-perf). Complete the words from `cutile-perf`
# on as the command line of `gitcutileperf`.
_git_cutile_perf() {
    local i at=0
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == cutile-perf ]]; then
            at=$i
            break
        fi
    done
    ((at > 0)) || return 0
    local words_from_verb=("${COMP_WORDS[@]:at+1}")
    local COMP_WORDS=(gitcutileperf "${words_from_verb[@]}")
    local COMP_CWORD=$((COMP_CWORD - at))
    # git completes with -o nospace; whole words here want their usual trailing space.
    compopt +o nospace 2>/dev/null
    _gitcutileperf gitcutileperf "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
}
"#;

fn bash() -> String {
    let script = clap_script(clap_complete::Shell::Bash, BASH_INNER);
    // Drop clap_complete's registration of the inner name: nothing is called `gitcutileperf`.
    let functions = match script.rfind("\nif [[ \"${BASH_VERSINFO[0]}\"") {
        Some(at) if script[at..].contains(&format!(" {BASH_INNER}\n")) => &script[..=at],
        _ => script.as_str(),
    };
    format!(
        "# bash completion for git-cutile-perf: `git cutile-perf <TAB>` and `git-cutile-perf <TAB>`.\n\
         # Generated by `git cutile-perf completions bash`; do not edit.\n\n\
         {functions}{BASH_GIT_ENTRY}\n{BASH_REGISTER}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_page_per_visible_verb_named_like_git() {
        let pages = man_pages();
        let names: Vec<&str> = pages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[0], "git-cutile-perf.1");
        for verb in [
            "start",
            "step",
            "table",
            "status",
            "demo",
            "man",
            "install-extras",
        ] {
            assert!(
                names.contains(&format!("git-cutile-perf-{verb}.1").as_str()),
                "{verb}"
            );
        }
        assert!(!names.contains(&"git-cutile-perf-help.1"));
        let hidden: Vec<String> = command()
            .get_subcommands()
            .filter(|sub| sub.is_hide_set())
            .map(|sub| format!("git-cutile-perf-{}.1", sub.get_name()))
            .collect();
        assert!(names.iter().all(|n| !hidden.iter().any(|h| h == n)));
        assert!(names.iter().all(|n| is_our_man_page(n)));
    }

    #[test]
    fn pages_name_the_git_command_and_not_the_commit() {
        let step = man_page(Some("step")).unwrap();
        assert!(step.contents.contains(".TH git-cutile-perf-step 1"));
        assert!(step.contents.contains("git cutile\\-perf step"), "synopsis");
        let top = man_page(None).unwrap();
        assert!(top.contents.contains("git\\-cutile\\-perf\\-step(1)"));
        assert!(!top.contents.contains(env!("CUTILE_PERF_COMMIT")));
        assert!(man_page(Some("no-such-verb")).is_none());
    }

    #[test]
    fn bash_script_defines_git_entry_and_registers_the_binary() {
        let script = completion(Shell::Bash).contents;
        assert!(script.contains("_gitcutileperf() {"));
        assert!(script.contains("_git_cutile_perf() {"));
        assert!(script.ends_with("git-cutile-perf\nfi\n"));
        assert!(
            !script.contains(" gitcutileperf\n"),
            "inner name is not registered"
        );
    }

    #[test]
    fn our_man_page_names() {
        assert!(is_our_man_page("git-cutile-perf.1"));
        assert!(is_our_man_page("git-cutile-perf-old-verb.1"));
        assert!(!is_our_man_page("git-cutile-perfx.1"));
        assert!(!is_our_man_page("git.1"));
        assert!(!is_our_man_page("git-cutile-perf-step.1.bak"));
    }
}
