//! Which process a recorded number meant. Process ids are reused (after a reboot at once, and within
//! one boot once the counter wraps), so a pid written to a file by a command that was killed may name
//! an unrelated process later. A process is the triple of its id, its start time (field 22 of
//! `/proc/<pid>/stat`, clock ticks since boot) and the boot it ran in (`/proc/sys/kernel/random/boot_id`):
//! the tool signals or waits on a recorded process only when all three still match.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: u32,
    /// Clock ticks after boot at which the process started.
    pub start_ticks: u64,
    pub boot_id: String,
}

impl ProcessIdentity {
    /// The process running as `pid` now, if one does and `/proc` can be read.
    pub fn of(pid: u32) -> Option<ProcessIdentity> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(ProcessIdentity {
            pid,
            start_ticks: start_ticks(&stat)?,
            boot_id: boot_id()?,
        })
    }

    /// This process.
    pub fn current() -> Option<ProcessIdentity> {
        ProcessIdentity::of(std::process::id())
    }

    /// Whether the very process recorded still runs (a zombie is not running).
    pub fn alive(&self) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid));
        stat.is_ok_and(|stat| {
            start_ticks(&stat) == Some(self.start_ticks)
                && state(&stat) != Some("Z")
                && boot_id().as_deref() == Some(self.boot_id.as_str())
        })
    }

    /// Whether the recorded process ran in this boot: its number, if in use as a process group now that
    /// the leader is gone, cannot have been given to another process (Linux keeps a group's id while any
    /// member lives).
    pub fn this_boot(&self) -> bool {
        boot_id().as_deref() == Some(self.boot_id.as_str())
    }

    /// Reads [`ProcessIdentity`]'s `Display` form: `pid start-ticks boot-id`.
    pub fn parse(text: &str) -> Option<ProcessIdentity> {
        let mut words = text.split_whitespace();
        let identity = ProcessIdentity {
            pid: words.next()?.parse().ok()?,
            start_ticks: words.next()?.parse().ok()?,
            boot_id: words.next()?.to_string(),
        };
        (identity.pid > 1 && !identity.boot_id.is_empty()).then_some(identity)
    }
}

impl fmt::Display for ProcessIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.pid, self.start_ticks, self.boot_id)
    }
}

/// The fields after the command name, which is in parentheses and may itself hold spaces or `)`.
fn after_name(stat: &str) -> Option<Vec<&str>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace().collect())
}

/// Field 22 of `/proc/<pid>/stat`; the fields after the name start at field 3.
fn start_ticks(stat: &str) -> Option<u64> {
    after_name(stat)?.get(22 - 3)?.parse().ok()
}

fn state(stat: &str) -> Option<&str> {
    after_name(stat)?.first().copied()
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    Some(id.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_past_a_name_with_spaces_and_parentheses() {
        let stat =
            "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 97 0 0 0 0 0 0 0 20 0 1 0 987654 1000 50";
        assert_eq!(start_ticks(stat), Some(987654));
        assert_eq!(state(stat), Some("S"));
    }

    #[test]
    fn this_process_is_itself_and_a_reused_number_is_not() {
        let me = ProcessIdentity::current().unwrap();
        assert!(me.alive() && me.this_boot());
        assert_eq!(ProcessIdentity::parse(&me.to_string()), Some(me.clone()));
        let reused = ProcessIdentity {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(!reused.alive());
        let other_boot = ProcessIdentity {
            boot_id: "another-boot".into(),
            ..me
        };
        assert!(!other_boot.alive() && !other_boot.this_boot());
    }

    #[test]
    fn a_bare_number_or_a_bad_line_is_no_identity() {
        for text in ["4242", "-1", "", "1 5 boot", "x 5 boot", "4242 x boot"] {
            assert_eq!(ProcessIdentity::parse(text), None, "{text}");
        }
    }
}
