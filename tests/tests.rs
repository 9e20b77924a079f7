//! The integration tests, as one test binary: each file beside this one is a module, so that cargo
//! links one binary instead of one per file and the harness (`support`) is built once.
//! A new file here gets a `mod` line below.

mod support;

mod benchmark_source;
mod campaign;
mod campaign_slurm;
mod compile_facts;
mod demo;
mod diagnose;
mod diagnose_step;
mod documented_commands;
mod earned;
mod errors;
mod extras;
mod faults;
mod fixture_noise;
mod forged;
mod gpu;
mod gpu_commands;
mod gpus;
mod guards;
mod hints;
mod hook;
mod in_process;
mod inspect;
mod inspect_tilegym;
mod integrity;
mod layers;
#[path = "loop.rs"]
mod loop_;
mod mcp;
mod perf_file;
mod plot;
mod progress;
mod real_sessions;
mod refs;
mod refusals;
mod replay;
mod report;
mod sessions_apart;
mod settings;
mod skill;
mod slurm;
mod step_cost;
mod stops;
mod take_back;
mod travel;
mod warm;
mod words;
