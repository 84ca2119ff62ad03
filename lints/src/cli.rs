//! The `devcheck-lint` command line, also run by `cargo devcheck lint`.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::rules;
use crate::{exit, lint_paths, render, Config, RuleId};
use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};

/// Finds host syncs (scalar reads, host copies, printing, host-value ops,
/// data-dependent shapes, syncing helpers) inside hot loops of tch code.
///
/// Exit status: 0 when nothing at warning level or above was found, 1 when
/// warnings or errors were found, 2 on bad usage or when some input could not
/// be read or parsed (everything else is still linted and reported).
#[derive(Debug, Parser)]
#[command(name = "devcheck-lint", version)]
struct Cli {
    /// Files and directories to lint; directories are walked honouring .gitignore.
    #[arg(default_value = ".")]
    paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Configuration file; by default devcheck.toml is looked for in the
    /// first path's directory and its ancestors.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// When to colour human output; `auto` colours a terminal unless NO_COLOR is set.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    color: ColorChoice,
    /// Print a rule's documentation and exit.
    #[arg(long, value_name = "RULE", exclusive = true)]
    explain: Option<String>,
    /// List the rules and exit.
    #[arg(long, exclusive = true)]
    list_rules: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Human,
    Json,
    Sarif,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Runs the command line `args` (the program's name first): what the
/// `devcheck-lint` binary and `cargo devcheck lint` do.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            // As clap would: a usage error fails, --help and --version succeed.
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                exit::FAILURE
            } else {
                exit::SUCCESS
            });
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    let mut stdout = std::io::stdout().lock();
    if cli.list_rules {
        for rule in rules::all() {
            writeln!(
                stdout,
                "{:<22} {:<5} {}",
                rule.id.as_str(),
                level_name(rule.default_level),
                rule.summary
            )?;
        }
        return Ok(exit::SUCCESS);
    }
    if let Some(id) = &cli.explain {
        let Some(rule) = RuleId::parse(id) else {
            bail!("unknown rule `{id}`; `devcheck-lint --list-rules` lists them");
        };
        write!(stdout, "{}", rule.info().explain())?;
        return Ok(exit::SUCCESS);
    }
    let config = match &cli.config {
        Some(path) => Config::load(path)?,
        None => {
            let start = cli
                .paths
                .first()
                .cloned()
                .unwrap_or_else(|| PathBuf::from("."));
            Config::discover(&start).context("while looking for devcheck.toml")?
        }
    };
    let report = lint_paths(&cli.paths, &config);
    let text = match cli.format {
        Format::Json => render::json(&report),
        Format::Sarif => {
            let cwd = std::env::current_dir().context("cannot read the current directory")?;
            render::sarif(&report, &cwd, &render::source_root(&cwd))
        }
        Format::Human => {
            let color = match cli.color {
                ColorChoice::Always => true,
                ColorChoice::Never => false,
                ColorChoice::Auto => {
                    std::io::stdout().is_terminal()
                        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                }
            };
            render::human(&report, color)
        }
    };
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(report.exit_code())
}

fn level_name(level: crate::Level) -> &'static str {
    match level {
        crate::Level::Allow => "allow",
        crate::Level::Note => "note",
        crate::Level::Warn => "warn",
        crate::Level::Deny => "deny",
    }
}
