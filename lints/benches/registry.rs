//! Times the full lint against a bare parallel `syn::parse_file` of the same
//! files, in one run, and prints both times and their ratio.
//!
//! `cargo bench -p devcheck-lint --bench registry -- [--runs N] [PATH ...]`
//!
//! With no PATH it uses every `.rs` file under `$CARGO_HOME/registry/src`
//! (default `~/.cargo/registry/src`). All files are read into memory first,
//! so I/O is excluded from both timings; both run on the same kind of rayon
//! pool (one thread per core, the lint's worker stack size). Each side runs
//! N times (default 5) after one warm-up, alternating, and the median is
//! reported. The goal is a ratio lint/parse of at most 0.15.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use devcheck_lint::{exit, lint_sources, Config, WORKER_STACK_SIZE};
use rayon::prelude::*;

fn main() {
    let mut runs = 5usize;
    let mut roots = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(runs)
                    .max(1)
            }
            // cargo bench passes `--bench` to harness-less benches.
            flag if flag.starts_with("--") => {}
            path => roots.push(PathBuf::from(path)),
        }
    }
    if roots.is_empty() {
        roots.push(default_registry());
    }

    let walked = devcheck_lint::walk::collect_rust_files(&roots);
    let mut skipped = walked.errors.len();
    let sources: Vec<(PathBuf, String)> = walked
        .files
        .into_iter()
        .filter_map(|path| match std::fs::read(&path).map(String::from_utf8) {
            Ok(Ok(text)) => Some((path, text)),
            _ => {
                skipped += 1;
                None
            }
        })
        .collect();
    if sources.is_empty() {
        eprintln!(
            "no .rs files found under {}",
            roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        std::process::exit(exit::FAILURE.into());
    }
    let bytes: usize = sources.iter().map(|(_, text)| text.len()).sum();
    let megabytes = bytes as f64 / 1e6;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(WORKER_STACK_SIZE)
        .build()
        .expect("a thread pool");
    let config = Config::default();

    let parse_all = || {
        pool.install(|| {
            sources
                .par_iter()
                .filter(|(_, text)| {
                    let parsed = syn::parse_file(text).is_ok();
                    // As in the lint: drop this thread's copy of the source.
                    proc_macro2::extra::invalidate_current_thread_spans();
                    parsed
                })
                .count()
        })
    };
    let lint_all = || lint_sources(&sources, &config);

    println!("devcheck-lint registry benchmark");
    println!(
        "files: {} .rs files, {megabytes:.1} MB under {} ({skipped} unreadable or not UTF-8, left out); {threads} threads",
        sources.len(),
        roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", "),
    );
    println!("inputs are read into memory first: I/O is excluded from both timings");

    let parsed_ok = parse_all();
    let warm = lint_all();
    let parsed_by_lint = warm.files_parsed;
    let mut parse_times = Vec::new();
    let mut lint_times = Vec::new();
    for _ in 0..runs {
        parse_times.push(time(|| {
            parse_all();
        }));
        lint_times.push(time(|| {
            lint_all();
        }));
    }
    let parse = median(&mut parse_times);
    let lint = median(&mut lint_times);
    let rate = |d: Duration| megabytes / d.as_secs_f64();
    println!(
        "bare parallel syn::parse_file: median {:.3} s of {runs} runs ({:.1} MB/s; {parsed_ok} files parse)",
        parse.as_secs_f64(),
        rate(parse)
    );
    println!(
        "devcheck-lint (full lint):     median {:.3} s of {runs} runs ({:.1} MB/s; {parsed_by_lint} files parsed, {} findings, {} errors)",
        lint.as_secs_f64(),
        rate(lint),
        warm.findings.len(),
        warm.errors.len(),
    );
    println!(
        "ratio lint/parse: {:.3} (goal: at most 0.15)",
        lint.as_secs_f64() / parse.as_secs_f64()
    );
}

fn default_registry() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
            home.join(".cargo")
        });
    cargo_home.join("registry").join("src")
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
