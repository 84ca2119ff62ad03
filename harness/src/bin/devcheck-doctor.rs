//! `devcheck-doctor [--json]`: what this libtorch can run on, and what to fix.

use std::process::ExitCode;

use devcheck::environment::{Environment, Severity};

fn main() -> ExitCode {
    let json = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--json") => true,
        Some("-h" | "--help") => {
            println!("usage: devcheck-doctor [--json]\n\nReports backends (built / available / devices), libtorch and tch versions, host and behaviour flags.");
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("error: unexpected argument `{other}`\n\nusage: devcheck-doctor [--json]");
            return ExitCode::from(2);
        }
    };
    let env = match Environment::collect() {
        Ok(env) => env,
        Err(error) => {
            eprintln!("error: could not inspect libtorch: {error}");
            return ExitCode::FAILURE;
        }
    };
    if json {
        match serde_json::to_string_pretty(&env) {
            Ok(text) => println!("{text}"),
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", env.render());
    }
    let broken = env.findings().iter().any(|f| f.severity == Severity::Error);
    if broken {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
