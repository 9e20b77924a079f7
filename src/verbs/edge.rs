//! The edge between the command line and the verbs, the one way to a verb: clap's arguments become each
//! verb's options here, so that the verbs know nothing of clap and a test can build options from words as
//! a user types them; the verb runs and its report is shown.

use anyhow::Result;

use crate::system::ui::{Render, Ui};
use crate::system::{git, process};
use crate::verbs::cli::{self, CampaignAction, Cli, Command, HookAction};
use crate::verbs::commands::{
    campaign, compare, config, demo, diagnose, extras, hook, inspect, next, plot, refs, remote,
    repair, report, scaffold, skill, start, status, step, table, verify,
};

/// Runs a verb and shows its report, or passes its failure on.
fn show<R: Render>(ui: &mut Ui, verb: impl FnOnce(&mut Ui) -> Result<R>) -> Result<()> {
    let report = verb(ui)?;
    ui.show(&report)
}

/// Runs the verb the command line names and shows its report (`mcp` is served by `main`, which keeps
/// stdout unlocked for it).
pub fn run(ui: &mut Ui, cli: Cli) -> Result<()> {
    process::install_interrupt_handler()?;
    // opened only by the verbs that work on a repository
    let open = || git::Repo::discover(&std::env::current_dir()?);
    let repo = || git::check_git_version().and_then(|()| open());
    match cli.command {
        Command::Start(args) if args.scaffold => {
            show(ui, |_| scaffold::run(&repo()?, &args.into()))
        }
        Command::Start(args) => show(ui, |ui| start::run(ui, &repo()?, &args.try_into()?)),
        Command::Inspect(args) => match args.into() {
            inspect::Inspect::All => show(ui, |_| inspect::all(&repo()?)),
            inspect::Inspect::One(options) => show(ui, |ui| inspect::run(ui, &repo()?, &options)),
        },
        Command::Step(args) => show(ui, |ui| step::run(ui, &repo()?, &args.into())),
        Command::Diagnose(args) => show(ui, |ui| diagnose::run(ui, &repo()?, &args.into())),
        Command::Compare(args) => show(ui, |_| compare::run(&repo()?, args.a, args.b)),
        Command::Table(args) => show(ui, |_| table::run(&repo()?, &args.into())),
        Command::Plot(args) => show(ui, |_| plot::run(&repo()?, &args.into())),
        Command::Report(args) => show(ui, |_| report::run(&repo()?, &args.into())),
        Command::Status(_) => show(ui, |ui| status::run(ui, &repo()?)),
        Command::Verify(_) => {
            let report = verify::run(&repo()?)?;
            ui.show(&report)?;
            report.verdict()
        }
        Command::Push(args) => show(ui, |_| remote::push(&repo()?, &args.into())),
        Command::Fetch(args) => {
            let report = remote::fetch(&repo()?, &args.into())?;
            ui.show(&report)?;
            report.verdict()
        }
        Command::SetupRemote(args) => show(ui, |_| {
            remote::setup_remote(&repo()?, args.remote.as_deref())
        }),
        Command::Config(_) => show(ui, |_| config::run()),
        Command::Repair(_) => show(ui, |_| repair::run(&repo()?)),
        Command::Next(args) => show(ui, |ui| next::run(ui, &repo()?, &args.into())),
        Command::Refs(args) => show(ui, |_| refs::run(&args.into())),
        Command::Skill(args) => show(ui, |_| skill::run(repo().ok().as_ref(), &args.into())),
        Command::Campaign(args) => run_campaign(ui, args.action, repo),
        Command::Mcp => unreachable!("served in main"),
        Command::Hook(args) => show(ui, |_| hook::run(&open()?, &args.action.into())),
        Command::Demo(args) => show(ui, |ui| demo::run(ui, args.dir.as_deref())),
        Command::Man(args) => show(ui, |_| extras::man(&args.into())),
        Command::Completions(args) => show(ui, |_| extras::completions(&args.into())),
        Command::InstallExtras(args) => show(ui, |_| extras::install(&args.into())),
        Command::UninstallExtras(args) => show(ui, |_| extras::uninstall(&args.into())),
    }
}

/// A `campaign` sub-verb, on the repository `repo` opens.
fn run_campaign(
    ui: &mut Ui,
    action: CampaignAction,
    repo: impl Fn() -> Result<git::Repo>,
) -> Result<()> {
    match action {
        CampaignAction::Start(args) => show(ui, |ui| {
            let options = (*args).try_into()?;
            campaign::start(ui, &repo()?, &options)
        }),
        CampaignAction::Resume(args) => show(ui, |ui| {
            let workers = args.workers.into();
            let name = args.campaign.name.as_deref();
            campaign::resume(ui, &repo()?, name, &workers, args.budget)
        }),
        CampaignAction::Status(args) => show(ui, |_| {
            campaign::report(&repo()?, args.name.as_deref(), false)
        }),
        CampaignAction::Table(args) => show(ui, |_| {
            campaign::report(&repo()?, args.name.as_deref(), true)
        }),
        CampaignAction::Report(args) => show(ui, |_| {
            campaign::page(&repo()?, args.campaign.name.as_deref(), args.out)
        }),
        CampaignAction::Next(args) => show(ui, |_| {
            let options = campaign::NextOptions {
                name: args.campaign.name,
                claim: args.claim,
                holder: args.holder,
                lease: args.lease,
            };
            campaign::next(&repo()?, &options)
        }),
        CampaignAction::Verify(args) => {
            let report = campaign::verify(&repo()?, args.name.as_deref())?;
            ui.show(&report)?;
            report.verdict()
        }
        CampaignAction::Work(args) => {
            show(ui, |ui| campaign::work(ui, &repo()?, args.name.as_deref()))
        }
    }
}

impl From<cli::CampaignWorkerArgs> for campaign::Workers {
    fn from(args: cli::CampaignWorkerArgs) -> campaign::Workers {
        campaign::Workers {
            gpus: args.gpus,
            jobs: args.jobs,
            no_gpu: args.no_gpu,
            timeout: args.timeout,
        }
    }
}

impl TryFrom<cli::CampaignStartArgs> for campaign::StartOptions {
    type Error = anyhow::Error;

    /// Fails on runner options that do not go together.
    fn try_from(args: cli::CampaignStartArgs) -> Result<campaign::StartOptions> {
        Ok(campaign::StartOptions {
            name: args.name,
            kernels: args.kernels,
            all: args.all,
            suite: args.suite,
            runner: args.runner.settings()?,
            start_args: args.start.start_args(args.workers.no_gpu),
            budget: args.start.budget,
            workers: args.workers.into(),
        })
    }
}

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
            python: args.python,
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

impl From<cli::TableArgs> for table::TableOptions {
    fn from(args: cli::TableArgs) -> table::TableOptions {
        table::TableOptions { write: args.write }
    }
}

impl From<cli::PlotArgs> for plot::PlotOptions {
    fn from(args: cli::PlotArgs) -> plot::PlotOptions {
        plot::PlotOptions { out: args.out }
    }
}

impl From<cli::ReportArgs> for report::ReportOptions {
    fn from(args: cli::ReportArgs) -> report::ReportOptions {
        report::ReportOptions { out: args.out }
    }
}

impl From<cli::NextArgs> for next::NextOptions {
    /// `--skip` goes with its `--why`, which clap requires beside it.
    fn from(args: cli::NextArgs) -> next::NextOptions {
        next::NextOptions {
            class: args.class,
            skip: args.skip.zip(args.why),
        }
    }
}

impl From<cli::RefsArgs> for refs::RefsOptions {
    fn from(args: cli::RefsArgs) -> refs::RefsOptions {
        refs::RefsOptions {
            name: args.name,
            section: args.section,
        }
    }
}

impl From<cli::ManArgs> for extras::GenerateOptions<String> {
    fn from(args: cli::ManArgs) -> extras::GenerateOptions<String> {
        extras::GenerateOptions {
            which: args.verb,
            dir: args.dir,
        }
    }
}

impl From<cli::CompletionsArgs> for extras::GenerateOptions<cli::Shell> {
    fn from(args: cli::CompletionsArgs) -> extras::GenerateOptions<cli::Shell> {
        extras::GenerateOptions {
            which: args.shell,
            dir: args.dir,
        }
    }
}

impl From<cli::ExtrasArgs> for extras::ExtrasOptions {
    /// `install-extras`: nothing of the demo to keep.
    fn from(args: cli::ExtrasArgs) -> extras::ExtrasOptions {
        extras::ExtrasOptions {
            prefix: args.prefix,
            keep_demo_env: false,
        }
    }
}

impl From<cli::UninstallArgs> for extras::ExtrasOptions {
    fn from(args: cli::UninstallArgs) -> extras::ExtrasOptions {
        extras::ExtrasOptions {
            prefix: args.extras.prefix,
            keep_demo_env: args.keep_demo_env,
        }
    }
}
