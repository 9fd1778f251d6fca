//! The `cenic` command line: inspect and run models.

use cenic::Model;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cenic", version, about = "Error-controlled convex contact simulation for robots")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a summary of a model (bodies, joints, geoms, actuators, nq, nv, total mass).
    Info {
        /// MJCF file; the built-in cube toss when omitted.
        model: Option<std::path::PathBuf>,
    },
}

fn load(path: &Option<std::path::PathBuf>) -> Result<Model, String> {
    match path {
        Some(p) => Model::from_mjcf_file(p).map_err(|e| e.to_string()),
        None => Ok(cenic::scenes::cube_toss()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { model } => load(&model).map(|m| print!("{}", m.summary())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
