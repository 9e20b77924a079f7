# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_git_cutile_perf_global_optspecs
    string join \n h/help V/version
end

function __fish_git_cutile_perf_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_git_cutile_perf_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_git_cutile_perf_using_subcommand
    set -l cmd (__fish_git_cutile_perf_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -s V -l version -d 'Print version'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "start" -d 'Create the session branch and record iteration 0 (correctness + benchmark, no code change)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "inspect" -d 'Show what setup reads from a kernel\'s source: kernels, launch wrappers, registrations, autotune spaces, allowed paths, test file and a static class estimate'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "step" -d 'Test, benchmark, decide and commit the current change to the kernel as one iteration'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "diagnose" -d 'Profile one config of an iteration with Nsight Compute and name its bottleneck (memory, compute, latency, scheduling, unknown) with the rule and numbers that decided it'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "compare" -d 'Two iterations side by side: kernel diff stat, per-config latency, and the ncu metric and compile-fact deltas of their cached diagnoses'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "table" -d 'Print the results table rebuilt from the session\'s commits'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "plot" -d 'Draw the session as an SVG picture: latency per iteration and each config against iteration 0'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "report" -d 'Write the session as one self-contained HTML page: its facts, the table, the plot, and each iteration\'s configs with intervals, reason, code change and compile facts'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "status" -d 'Show the session: kernel, allowed paths, baseline and best latency, and whether the loop may go on'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "verify" -d 'Audit the session\'s record: trailers against their evidence notes, undone attempts, allowed paths, foreign commits'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "push" -d 'Push the session branch with its evidence notes and session refs (plain `git push` leaves them behind); the remote\'s notes on other commits are merged in first'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "fetch" -d 'Fetch the session branches, evidence notes and session refs of a remote, so `verify` can run here; notes on different commits are merged, yours kept'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "setup-remote" -d 'Add the notes and session refs to remote.<name>.push and .fetch, so plain `git push` and `git fetch` carry them from then on'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "repair" -d 'Finish or undo an iteration that a killed `start` or `step` left half-done, or take back commits the tool did not make (a hand commit\'s change comes back to the work tree as an edit to step, or beside another edit to a patch it names); your edit is kept'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "config" -d 'List the settings git config may hold (cutile-perf.budget, ...), each value and where it came from'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "refs" -d 'Print a reference guide, or one section of it (e.g. `refs playbook B`)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "next" -d 'List the optimizations to try next for the session\'s kernel class, without those tried or skipped (`--skip` records a letter that cannot apply), and the reverted ones worth a variant'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "skill" -d 'Print the Agent Skill that teaches an agent the loop through this tool, or install it where agents look for skills'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "mcp" -d 'Serve the verbs an agent needs (start, step, status, ...) as Model Context Protocol tools over stdio; each tool returns the verb\'s --json report'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "campaign" -d 'Many kernels at once: a session per kernel in a worktree of its own, their baselines spread over the GPUs (or a Slurm array job), one record, one table and page, and agents claiming sessions'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "hook" -d 'Install, remove or inspect the pre-commit hook that enforces the allowed paths'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "demo" -d 'Run a short session on a built-in TileGym-shaped repository (no GPU needed)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "man" -d 'Write the man pages (one for the tool, one per verb), or print one page'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "completions" -d 'Write the bash, zsh and fish completion scripts, or print one'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "install-extras" -d 'Install the man pages and shell completions in your user\'s standard places'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "uninstall-extras" -d 'Remove what install-extras installed, the demo\'s Python environment and kept report, and the directories left empty'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l suite -d 'Which suite the kernel is in (`ops` or a suite name) when the name exists in several' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l test -d 'The kernel\'s test file, when none is found (named test_<kernel>.py or test_<suite>_<kernel>.py, importing the kernel\'s module, or calling its registered op), or to pick another' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l allow -d 'Another path iterations may change, besides those `inspect` finds (the kernel file, and files whose launch wrapper or autotune space its registered ops reach); repeatable' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l deny -d 'A path `inspect` found that iterations may NOT change; repeatable' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l python -d 'The Python command that runs pytest (e.g. `python3`, `uv run python`), split as a shell would: quote a path with spaces' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l filter -d 'A pytest -k expression that narrows the correctness and benchmark selections, e.g. to the shapes that fit the iteration budget' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l stat -d 'Which per-config statistic the decisions use' -r -f -a "mean\t''
median\t''
min\t''"
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l class -d 'The kernel\'s class (memory, balanced, compute), which orders the optimizations `next` suggests' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l intensity -d 'The kernel\'s arithmetic intensity (FLOP per byte), classifying it: <10 memory, 10-50 balanced, >50 compute' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l runner -d 'Where every iteration\'s tests run: here, or on a node Slurm allocates per iteration' -r -f -a "local\t''
slurm\t''"
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l slurm-args -d 'sbatch options for each iteration\'s allocation, split as a shell would (e.g. "-p gpu --gres=gpu:1 -t 15")' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l queue-timeout -d 'How long an iteration may wait in the Slurm queue (not counted in --budget; default 30m)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l gpus -d 'The session\'s GPUs by nvidia-smi\'s index (e.g. 1,2), all of one model: the baseline is measured on the first (CUDA_VISIBLE_DEVICES); default: the environment\'s GPU (local runner only)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l budget -d 'Time limit for the baseline run (e.g. 10m, 90s, 1m30s)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l continue-pct -d 'Improvement (%) from which the loop continues at full priority' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l gain-pct -d 'Improvement (%) below which an iteration counts as no gain' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l regression-pct -d 'Slowdown (%) of any single config that reverts the change' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l max-iterations -d 'Iterations after which the loop stops' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l max-no-gain -d 'Consecutive iterations without a gain after which the loop stops' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l scaffold -d 'Only write a session perf file (sandbox/perf_<kernel>.py) for a kernel without a test_perf: one running the cuTile lines of its standalone benchmark (tests/benchmark/bench_<kernel>.py), which start writes by itself when no --test is given; else a test_perf timing its registered op through the checkout\'s harness, on the call its correctness tests make of it (recorded in one run of them), grown along its batch dimension until it takes over 10 us; then start with --test sandbox/perf_<kernel>.py'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l no-gpu -d 'Start without a GPU (for tests that run on the CPU); recorded in the session, and steps do not look for one either'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand start" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l suite -d 'Which suite the kernel is in (`ops` or a suite name) when the name exists in several' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l capability -d 'The compute capability whose autotune branches to show (e.g. 9.0); default: the GPU\'s' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l python -d 'The Python command that runs pytest for --measure (e.g. `python3`, `uv run python`), split as a shell would' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l budget -d 'Time limit for --measure (e.g. 10m)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l all -d 'List every kernel file of the checkout with its test and how it would be measured (its test\'s test_perf, a session perf file, a standalone benchmark, or nothing): the coverage table'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l measure -d 'Measure the class with Nsight Compute (`ncu` on PATH): profile one launch of the kernel in its first perf case, autotuning off, and read DRAM bytes, FLOPs and duration'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l notes -d 'Longer notes kept in the commit message body' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l budget -d 'Time limit for the whole iteration; past it the tests are killed and the iteration is a crash' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l cause -d 'The bottleneck this optimization targets; scheduling and unknown escalate to the user' -r -f -a "memory\t''
compute\t''
latency\t''
scheduling\t''
unknown\t''"
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l opt -d 'The playbook letter this optimization follows (see `git cutile-perf refs playbook`), or `none` for a change that fits no letter; a step without it is refused' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l gpus -d 'The GPUs to measure on, by nvidia-smi\'s index (e.g. 0,1), each of the session\'s model: a (baseline, candidate) pair per GPU, the configs split among them; default: CUDA_VISIBLE_DEVICES, else every GPU found (local runner only)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l continue -d 'Run even though the loop has stopped or escalated'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand step" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand diagnose" -l config -d 'The config to profile, as the table and trailers name it (`classname::test_perf[...]`); default: the iteration\'s slowest config, the one that weighs most in the total time' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand diagnose" -l budget -d 'Time limit for the profiled run (e.g. 10m)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand diagnose" -l save -d 'Keep Nsight Compute\'s report in DIR (`iteration-N-<case>.ncu-rep`), to open in its UI' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand diagnose" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand diagnose" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand compare" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand compare" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand table" -l write -d 'Also write sandbox/perf_results.md, the plot (sandbox/perf_results.svg) and the report (sandbox/perf_results.html)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand table" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand table" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand plot" -l out -d 'Where to write the SVG (default: sandbox/perf_results.svg)' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand plot" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand plot" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand report" -l out -d 'Where to write the HTML page (default: sandbox/perf_results.html)' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand report" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand report" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand status" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand status" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand verify" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand verify" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand push" -l force -d 'Where both sides noted one commit differently, keep this side\'s note there (push) or take the remote\'s (fetch); every other note of both sides is kept either way'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand push" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand push" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand fetch" -l force -d 'Where both sides noted one commit differently, keep this side\'s note there (push) or take the remote\'s (fetch); every other note of both sides is kept either way'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand fetch" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand fetch" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand setup-remote" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand setup-remote" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand repair" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand repair" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand config" -l list -d 'List every setting with its value and source (default, or the git config scope)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand config" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand config" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand refs" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand refs" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand next" -l class -d 'Use this class instead of the session\'s' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand next" -l skip -d 'Record that this playbook letter cannot apply to the kernel (an empty commit on the session branch), so that `next` and every next action stop offering it; there is no un-skip' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand next" -l why -d 'Why the skipped letter cannot apply, e.g. "the timed kernel already uses ct.load/ct.store"' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand next" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand next" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l dir -d 'Install into DIR/git-cutile-perf instead' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l print -d 'Print SKILL.md (what happens without --install)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l install -d 'Write the skill\'s folder (SKILL.md, evals/evals.json) where agents look: by default the checkout\'s .claude/skills and .agents/skills, kept out of git through .git/info/exclude'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l user -d 'Install into your own ~/.claude/skills and ~/.agents/skills instead'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l project -d 'Install into the checkout\'s .claude/skills and .agents/skills (the default)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand skill" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "start" -d 'Start a session per kernel, each in a git worktree of its own, their baselines measured by one worker per GPU (or a Slurm array job); a kernel that fails is recorded with its reason'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "resume" -d 'Run again the campaign\'s kernels that are queued, were left running, or failed'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "status" -d 'Show the campaign: each kernel\'s state, baseline, iterations and best kept speedup'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "table" -d 'Print the campaign\'s table alone'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "report" -d 'Write the campaign as one HTML page linking each session\'s report, and print its path'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "next" -d 'Hand an agent the next started session that no agent holds, with its worktree'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "verify" -d 'Audit every started session of the campaign, as `verify` does one'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "work" -d 'Take one waiting kernel and run its baseline here (what each task of a Slurm array job runs)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and not __fish_seen_subcommand_from start resume status table report next verify work help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l suite -d 'Only this suite\'s kernels (`ops` or a suite name)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l name -d 'The campaign\'s name (default: today\'s date)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l gpus -d 'One worker per GPU, by nvidia-smi\'s index (e.g. 0,1,2,3), each pinned with CUDA_VISIBLE_DEVICES; default: one worker on the environment\'s GPU' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l jobs -d 'Without --gpus, how many workers share the environment; with --runner slurm, how many array tasks run at once (`%K`)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l timeout -d 'How long one kernel may take from getting its GPU (default: --budget and 5m of setup)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l runner -d 'Where every iteration\'s tests run: here, or on a node Slurm allocates per iteration' -r -f -a "local\t''
slurm\t''"
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l slurm-args -d 'sbatch options for each iteration\'s allocation, split as a shell would (e.g. "-p gpu --gres=gpu:1 -t 15")' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l queue-timeout -d 'How long an iteration may wait in the Slurm queue (not counted in --budget; default 30m)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l python -d 'The Python command that runs pytest, as `start --python` takes it' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l filter -d 'A pytest -k expression narrowing every session\'s selections' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l stat -d 'Which per-config statistic the decisions use' -r -f -a "mean\t''
median\t''
min\t''"
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l class -d 'Every kernel\'s class, instead of each one\'s own estimate' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l budget -d 'Time limit for each baseline run (e.g. 10m)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l continue-pct -d 'Improvement (%) from which each loop continues at full priority' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l gain-pct -d 'Improvement (%) below which an iteration counts as no gain' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l regression-pct -d 'Slowdown (%) of any single config that reverts a change' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l max-iterations -d 'Iterations after which each loop stops' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l max-no-gain -d 'Consecutive iterations without a gain after which each loop stops' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l all -d 'Every kernel file of the checkout (`inspect --all` lists them)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l no-gpu -d 'Start every session without a GPU (for tests that run on the CPU)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from start" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l budget -d 'A new time limit for each baseline run, in place of the campaign\'s (e.g. for kernels that failed at it)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l gpus -d 'One worker per GPU, by nvidia-smi\'s index (e.g. 0,1,2,3), each pinned with CUDA_VISIBLE_DEVICES; default: one worker on the environment\'s GPU' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l jobs -d 'Without --gpus, how many workers share the environment; with --runner slurm, how many array tasks run at once (`%K`)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l timeout -d 'How long one kernel may take from getting its GPU (default: --budget and 5m of setup)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -l no-gpu -d 'Start every session without a GPU (for tests that run on the CPU)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from resume" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from status" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from status" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from table" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from table" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from table" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from report" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from report" -l out -d 'Where to write the page (default: campaigns/<name>/campaign.html in the git dir)' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from report" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -l holder -d 'The process that holds the claim (default: the one that ran this command, e.g. the agent\'s shell or MCP server); the claim ends when it stops' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -l lease -d 'How long the claim lasts at most' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -l claim -d 'Claim it: no other agent gets it while the holder runs and the lease lasts'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from next" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from verify" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from verify" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from work" -l name -d 'The campaign (default: the newest)' -r
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from work" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from work" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "start" -d 'Start a session per kernel, each in a git worktree of its own, their baselines measured by one worker per GPU (or a Slurm array job); a kernel that fails is recorded with its reason'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "resume" -d 'Run again the campaign\'s kernels that are queued, were left running, or failed'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show the campaign: each kernel\'s state, baseline, iterations and best kept speedup'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "table" -d 'Print the campaign\'s table alone'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "report" -d 'Write the campaign as one HTML page linking each session\'s report, and print its path'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "next" -d 'Hand an agent the next started session that no agent holds, with its worktree'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Audit every started session of the campaign, as `verify` does one'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "work" -d 'Take one waiting kernel and run its baseline here (what each task of a Slurm array job runs)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand campaign; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "install" -d 'Install the hook into the repository\'s hooks directory; an existing hook is kept and runs first'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "uninstall" -d 'Remove the hook and restore, byte for byte, the one it replaced'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "status" -d 'Show whether the hook is installed, where, and what it chains to'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "pre-commit" -d 'The check the hook runs: on a session branch, reject staged paths outside the allowed set'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "commit-msg" -d 'The check the commit-msg hook runs: on a session branch, only the tool writes Cutile-Perf-* trailers'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and not __fish_seen_subcommand_from install uninstall status pre-commit commit-msg help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from install" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from uninstall" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from status" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from pre-commit" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from commit-msg" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "install" -d 'Install the hook into the repository\'s hooks directory; an existing hook is kept and runs first'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "uninstall" -d 'Remove the hook and restore, byte for byte, the one it replaced'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "status" -d 'Show whether the hook is installed, where, and what it chains to'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "pre-commit" -d 'The check the hook runs: on a session branch, reject staged paths outside the allowed set'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "commit-msg" -d 'The check the commit-msg hook runs: on a session branch, only the tool writes Cutile-Perf-* trailers'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand hook; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand demo" -l dir -d 'Build the demo repository here (must not exist) and keep it, instead of a temporary directory' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand demo" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand man" -l dir -d 'Write every page into DIR (created if missing) instead of printing one' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand man" -l json -d 'Print one JSON object listing the files written (with --dir)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand man" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand completions" -l dir -d 'Write the scripts (or the one shell\'s) into DIR (created if missing) instead of printing' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand completions" -l json -d 'Print one JSON object listing the files written (with --dir)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand completions" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand install-extras" -l prefix -d 'Use the layout under DIR (DIR/share/man/man1, DIR/share/bash-completion/completions, ...) instead of your user\'s directories (~/.local/share/..., ~/.config/fish/...)' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand install-extras" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand install-extras" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand uninstall-extras" -l prefix -d 'Use the layout under DIR (DIR/share/man/man1, DIR/share/bash-completion/completions, ...) instead of your user\'s directories (~/.local/share/..., ~/.config/fish/...)' -r -F
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand uninstall-extras" -l json -d 'Print one JSON object instead of text'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand uninstall-extras" -l keep-demo-env -d 'Keep the Python environment the demo made in the cache directory (it is remade on demand)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand uninstall-extras" -s h -l help -d 'Print help'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "start" -d 'Create the session branch and record iteration 0 (correctness + benchmark, no code change)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "inspect" -d 'Show what setup reads from a kernel\'s source: kernels, launch wrappers, registrations, autotune spaces, allowed paths, test file and a static class estimate'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "step" -d 'Test, benchmark, decide and commit the current change to the kernel as one iteration'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "diagnose" -d 'Profile one config of an iteration with Nsight Compute and name its bottleneck (memory, compute, latency, scheduling, unknown) with the rule and numbers that decided it'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "compare" -d 'Two iterations side by side: kernel diff stat, per-config latency, and the ncu metric and compile-fact deltas of their cached diagnoses'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "table" -d 'Print the results table rebuilt from the session\'s commits'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "plot" -d 'Draw the session as an SVG picture: latency per iteration and each config against iteration 0'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "report" -d 'Write the session as one self-contained HTML page: its facts, the table, the plot, and each iteration\'s configs with intervals, reason, code change and compile facts'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "status" -d 'Show the session: kernel, allowed paths, baseline and best latency, and whether the loop may go on'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "verify" -d 'Audit the session\'s record: trailers against their evidence notes, undone attempts, allowed paths, foreign commits'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "push" -d 'Push the session branch with its evidence notes and session refs (plain `git push` leaves them behind); the remote\'s notes on other commits are merged in first'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "fetch" -d 'Fetch the session branches, evidence notes and session refs of a remote, so `verify` can run here; notes on different commits are merged, yours kept'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "setup-remote" -d 'Add the notes and session refs to remote.<name>.push and .fetch, so plain `git push` and `git fetch` carry them from then on'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "repair" -d 'Finish or undo an iteration that a killed `start` or `step` left half-done, or take back commits the tool did not make (a hand commit\'s change comes back to the work tree as an edit to step, or beside another edit to a patch it names); your edit is kept'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "config" -d 'List the settings git config may hold (cutile-perf.budget, ...), each value and where it came from'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "refs" -d 'Print a reference guide, or one section of it (e.g. `refs playbook B`)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "next" -d 'List the optimizations to try next for the session\'s kernel class, without those tried or skipped (`--skip` records a letter that cannot apply), and the reverted ones worth a variant'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "skill" -d 'Print the Agent Skill that teaches an agent the loop through this tool, or install it where agents look for skills'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "mcp" -d 'Serve the verbs an agent needs (start, step, status, ...) as Model Context Protocol tools over stdio; each tool returns the verb\'s --json report'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "campaign" -d 'Many kernels at once: a session per kernel in a worktree of its own, their baselines spread over the GPUs (or a Slurm array job), one record, one table and page, and agents claiming sessions'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "hook" -d 'Install, remove or inspect the pre-commit hook that enforces the allowed paths'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "demo" -d 'Run a short session on a built-in TileGym-shaped repository (no GPU needed)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "man" -d 'Write the man pages (one for the tool, one per verb), or print one page'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "completions" -d 'Write the bash, zsh and fish completion scripts, or print one'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "install-extras" -d 'Install the man pages and shell completions in your user\'s standard places'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "uninstall-extras" -d 'Remove what install-extras installed, the demo\'s Python environment and kept report, and the directories left empty'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and not __fish_seen_subcommand_from start inspect step diagnose compare table plot report status verify push fetch setup-remote repair config refs next skill mcp campaign hook demo man completions install-extras uninstall-extras help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "start" -d 'Start a session per kernel, each in a git worktree of its own, their baselines measured by one worker per GPU (or a Slurm array job); a kernel that fails is recorded with its reason'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "resume" -d 'Run again the campaign\'s kernels that are queued, were left running, or failed'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "status" -d 'Show the campaign: each kernel\'s state, baseline, iterations and best kept speedup'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "table" -d 'Print the campaign\'s table alone'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "report" -d 'Write the campaign as one HTML page linking each session\'s report, and print its path'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "next" -d 'Hand an agent the next started session that no agent holds, with its worktree'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "verify" -d 'Audit every started session of the campaign, as `verify` does one'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from campaign" -f -a "work" -d 'Take one waiting kernel and run its baseline here (what each task of a Slurm array job runs)'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "install" -d 'Install the hook into the repository\'s hooks directory; an existing hook is kept and runs first'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "uninstall" -d 'Remove the hook and restore, byte for byte, the one it replaced'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "status" -d 'Show whether the hook is installed, where, and what it chains to'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "pre-commit" -d 'The check the hook runs: on a session branch, reject staged paths outside the allowed set'
complete -c git-cutile-perf -n "__fish_git_cutile_perf_using_subcommand help; and __fish_seen_subcommand_from hook" -f -a "commit-msg" -d 'The check the commit-msg hook runs: on a session branch, only the tool writes Cutile-Perf-* trailers'
