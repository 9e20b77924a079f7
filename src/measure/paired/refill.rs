//! The spares a step tops up as each round begins, where the settings ask
//! ([`super::Settings::refill_spares`]): the workers of the rounds past those the last step's spares
//! covered are made of them, and those left over serve the next step.

use super::held::{say_started, top_up_spares};
use crate::system::git::Repo;
use crate::system::ui::Progress;
use crate::system::workers::spare::Pool;

/// Each GPU's spares for the step's later workers (none: that GPU's are not topped up).
pub struct Refill<'a> {
    pub repo: &'a Repo,
    pub pools: &'a [Option<Pool>],
}

impl Refill<'_> {
    /// Starts spares until each GPU's pool holds `count`, before round `round` measures; says which
    /// started. One that cannot start is a warning: those rounds' workers start as themselves.
    pub fn top_up(&self, count: usize, round: usize, progress: &Progress) {
        for pool in self.pools.iter().flatten() {
            let started = top_up_spares(self.repo, pool, count);
            let what = format!("start beside round {round},");
            say_started(progress, started, &what, "for later rounds' workers");
        }
    }

    /// The pids of every GPU's spares: the step's own processes, never another's on a GPU.
    pub fn pids(&self) -> Vec<u32> {
        self.pools.iter().flatten().flat_map(Pool::pids).collect()
    }
}
