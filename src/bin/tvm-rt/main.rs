//! `tvm-rt`: inspect, run, benchmark and profile compiled TVM models from the command line,
//! on this crate's runtime. One module per subcommand; `model` loads a model and builds its
//! executors, `tensors` reads and writes `.npy` files, `fail` carries errors to exit codes.

mod bench;
mod dot;
mod fail;
mod ffi_swap;
mod inputs;
mod inspect;
mod model;
mod params;
mod profile;
mod rpc_server;
mod run;
mod table;
mod tensors;
mod vm;

use clap::{Parser, Subcommand};
use fail::Failure;
use std::process::ExitCode;

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  `run --compare`: an output differs from the expected array
  2  usage or input error: bad arguments, a missing or unreadable file, a bad .npy, an unknown
     input name, a wrong shape or dtype
  3  the runtime failed while running the model";

/// Inspect, run, benchmark and profile compiled TVM models (export_library .so files of graph
/// executor factories or Relax VM executables, or graph JSON + kernel library + params).
#[derive(Parser)]
#[command(name = "tvm-rt", version, after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Inspect(inspect::Args),
    Run(run::Args),
    Bench(bench::Args),
    Profile(profile::Args),
    Dot(dot::Args),
    RpcServer(rpc_server::Args),
    FfiSwap(ffi_swap::Args),
    /// List, extract and pack params files (TVM's weights format)
    #[command(subcommand)]
    Params(params::Command),
}

fn dispatch(command: Command) -> Result<(), Failure> {
    tvm_runtime::init();
    match command {
        Command::Inspect(a) => inspect::main(a),
        Command::Run(a) => run::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Profile(a) => profile::main(a),
        Command::Dot(a) => dot::main(a),
        Command::RpcServer(a) => rpc_server::main(a),
        Command::FfiSwap(a) => ffi_swap::main(a),
        Command::Params(c) => params::main(c),
    }
}

/// End quietly when the reader of our output goes away (`tvm-rt dot m.so | head`), as Unix
/// tools do, instead of failing a write and reporting it.
fn die_on_broken_pipe() {
    // SAFETY: called first thing in main, before any other thread exists; SIG_DFL is a valid
    // disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    die_on_broken_pipe();
    // Usage errors exit with clap's code 2, which is ours too.
    let cli = Cli::parse();
    fail::quiet_panics();
    match std::panic::catch_unwind(|| dispatch(cli.command)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(f)) => f.report(),
        Err(_) => Failure::runtime("internal error (see the message above)").report(),
    }
}
