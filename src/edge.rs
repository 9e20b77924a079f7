//! The edge between the command line and the verbs: clap's arguments become each verb's options here,
//! so that the verbs know nothing of clap and a test can build options from words as a user types them.

use anyhow::Result;

use crate::verbs::cli::{self, HookAction};
use crate::verbs::commands::{diagnose, hook, inspect, remote, scaffold, skill, start, step};

impl TryFrom<cli::StartArgs> for start::StartOptions {
    type Error = anyhow::Error;

    /// Fails on runner options that do not go together.
    fn try_from(args: cli::StartArgs) -> Result<start::StartOptions> {
        Ok(start::StartOptions {
            kernel: args.kernel,
            suite: args.suite,
            test: args.test,
            allow: args.allow,
            deny: args.deny,
            python: args.python,
            filter: args.filter,
            stat: args.stat,
            class: args.class,
            intensity: args.intensity,
            runner: args.runner.settings()?,
            no_gpu: args.no_gpu,
            gpus: args.gpus,
            budget: args.budget,
            thresholds: args.thresholds.thresholds(),
        })
    }
}

impl From<cli::InspectArgs> for inspect::Inspect {
    /// `--all`, or the one kernel clap requires without it.
    fn from(args: cli::InspectArgs) -> inspect::Inspect {
        let Some(kernel) = args.kernel.filter(|_| !args.all) else {
            return inspect::Inspect::All;
        };
        inspect::Inspect::One(inspect::InspectOptions {
            kernel,
            suite: args.suite,
            capability: args.capability,
            measure: args.measure,
            python: args.python,
            budget: args.budget,
        })
    }
}

impl From<cli::StartArgs> for scaffold::ScaffoldOptions {
    /// `start --scaffold`: the kernel only.
    fn from(args: cli::StartArgs) -> scaffold::ScaffoldOptions {
        scaffold::ScaffoldOptions {
            kernel: args.kernel,
            suite: args.suite,
        }
    }
}

impl From<cli::StepArgs> for step::StepOptions {
    fn from(args: cli::StepArgs) -> step::StepOptions {
        step::StepOptions {
            description: args.description,
            notes: args.notes,
            budget: args.budget,
            continue_anyway: args.continue_anyway,
            cause: args.cause,
            opt: args.opt,
            gpus: args.gpus,
        }
    }
}

impl From<cli::DiagnoseArgs> for diagnose::DiagnoseOptions {
    fn from(args: cli::DiagnoseArgs) -> diagnose::DiagnoseOptions {
        diagnose::DiagnoseOptions {
            iteration: args.iteration,
            config: args.config,
            budget: args.budget,
            save: args.save,
        }
    }
}

impl From<cli::TravelArgs> for remote::TravelOptions {
    fn from(args: cli::TravelArgs) -> remote::TravelOptions {
        remote::TravelOptions {
            remote: args.remote,
            force: args.force,
        }
    }
}

impl From<cli::SkillArgs> for skill::SkillOptions {
    fn from(args: cli::SkillArgs) -> skill::SkillOptions {
        skill::SkillOptions {
            install: args.install,
            dir: args.dir,
            user: args.user,
        }
    }
}

impl From<HookAction> for hook::HookOptions {
    fn from(action: HookAction) -> hook::HookOptions {
        match action {
            HookAction::Install => hook::HookOptions::Install,
            HookAction::Uninstall => hook::HookOptions::Uninstall,
            HookAction::Status(_) => hook::HookOptions::Status,
            HookAction::PreCommit => hook::HookOptions::PreCommit,
            HookAction::CommitMsg { message } => hook::HookOptions::CommitMsg(message),
        }
    }
}
