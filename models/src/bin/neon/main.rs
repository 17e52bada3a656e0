//! `neon`: on-device audio models from the command line.
//!
//! - `neon wake WAV|-`: wake-word detection with the official openWakeWord models.

mod wake;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Fast on-device audio models (openWakeWord) on ARM64 NEON, with a portable fallback.
#[derive(Parser)]
#[command(name = "neon", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Detect wake words in a WAV file, or in raw s16le 16 kHz mono audio on stdin (`-`).
    Wake(wake::WakeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Wake(args) => wake::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("neon: {message}");
            ExitCode::FAILURE
        }
    }
}
