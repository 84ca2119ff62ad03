//! A lint run: read, prefilter, parse in parallel, resolve per crate, report.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use rayon::prelude::*;

use crate::analysis::crate_pass::CrateIndex;
use crate::analysis::facts::{Context, FileFacts, Loc};
use crate::analysis::{analyze_source, AnalysisError};
use crate::config::{Config, Level};
use crate::rules::RuleId;
use crate::{prefilter, walk, FileError, Finding, Report, Severity};

/// Stack size of the worker threads: syn and the walker recurse once per
/// nesting level, and the prefilter admits up to `MAX_NESTING` of them.
pub const WORKER_STACK_SIZE: usize = 256 * 1024 * 1024;

/// Lints the files and directories at `paths`.
pub fn lint_paths(paths: &[PathBuf], config: &Config) -> Report {
    let walked = walk::collect_rust_files(paths);
    let inputs = walked
        .files
        .into_iter()
        .map(|path| Input { path, text: None })
        .collect();
    run(inputs, walked.errors, config)
}

/// Lints sources already in memory. Paths are used for messages and to find
/// each file's crate (the nearest `Cargo.toml` above it), nothing is read.
pub fn lint_sources(sources: &[(PathBuf, String)], config: &Config) -> Report {
    let inputs = sources
        .iter()
        .map(|(path, text)| Input {
            path: path.clone(),
            text: Some(text.as_str()),
        })
        .collect();
    run(inputs, Vec::new(), config)
}

struct Input<'a> {
    path: PathBuf,
    text: Option<&'a str>,
}

/// One file after the first pass.
struct Scanned<'a> {
    path: PathBuf,
    crate_root: Option<PathBuf>,
    /// Kept for parsed files (rendering) and in-memory inputs (second pass).
    text: Option<Cow<'a, str>>,
    read: bool,
    facts: Option<FileFacts>,
    error: Option<FileError>,
}

fn run(inputs: Vec<Input<'_>>, mut errors: Vec<FileError>, config: &Config) -> Report {
    let mut roots = HashMap::new();
    let crate_roots: Vec<Option<PathBuf>> = inputs
        .iter()
        .map(|i| crate_root(&i.path, &mut roots))
        .collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(WORKER_STACK_SIZE)
        .thread_name(|i| format!("devcheck-lint-{i}"))
        .build();
    let work = || first_and_second_pass(inputs, crate_roots, config);
    let mut scanned = match &pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    };
    let mut report = Report {
        files_scanned: scanned.iter().filter(|s| s.read).count(),
        files_parsed: scanned.iter().filter(|s| s.facts.is_some()).count(),
        ..Report::default()
    };
    for file in &mut scanned {
        errors.extend(file.error.take());
        if let Some(facts) = &file.facts {
            errors.extend(
                facts
                    .incomplete
                    .iter()
                    .chain(&facts.suppressions.unknown)
                    .map(|(line, message)| FileError {
                        file: file.path.clone(),
                        line: Some(*line),
                        message: message.clone(),
                    }),
            );
        }
    }
    report.findings = findings(&scanned, config);
    let wanted: HashSet<&Path> = report
        .findings
        .iter()
        .map(|f| f.file.as_path())
        .chain(errors.iter().map(|e| e.file.as_path()))
        .collect();
    for file in &scanned {
        if let (true, Some(text)) = (wanted.contains(file.path.as_path()), &file.text) {
            report
                .sources
                .insert(file.path.clone(), Arc::from(text.as_ref()));
        }
    }
    errors.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    report.errors = errors;
    report
}

/// The nearest directory above `path` holding a `Cargo.toml`.
fn crate_root(path: &Path, cache: &mut HashMap<PathBuf, Option<PathBuf>>) -> Option<PathBuf> {
    let mut visited = Vec::new();
    let mut found = None;
    for dir in path.ancestors().skip(1) {
        if let Some(known) = cache.get(dir) {
            found = known.clone();
            break;
        }
        visited.push(dir.to_owned());
        let manifest = if dir.as_os_str().is_empty() {
            PathBuf::from("Cargo.toml")
        } else {
            dir.join("Cargo.toml")
        };
        if manifest.is_file() {
            found = Some(dir.to_owned());
            break;
        }
    }
    for dir in visited {
        cache.insert(dir, found.clone());
    }
    found
}

fn first_and_second_pass<'a>(
    inputs: Vec<Input<'a>>,
    crate_roots: Vec<Option<PathBuf>>,
    config: &Config,
) -> Vec<Scanned<'a>> {
    let everything = !config.patterns.is_empty();
    let mut scanned: Vec<Scanned<'a>> = inputs
        .into_par_iter()
        .zip(crate_roots)
        .map(|(input, crate_root)| {
            let from_memory = input.text.is_some();
            let text = match load(&input, config) {
                Ok(text) => text,
                Err(error) => {
                    return Scanned {
                        path: input.path,
                        crate_root,
                        text: None,
                        read: false,
                        facts: None,
                        error: Some(error),
                    };
                }
            };
            if everything || prefilter::is_candidate(&text) {
                let (facts, error) = analyze(&input.path, &text, config);
                Scanned {
                    path: input.path,
                    crate_root,
                    text: Some(text),
                    read: true,
                    facts,
                    error,
                }
            } else {
                // Files read from disk are dropped now and re-read if the
                // second pass needs them; in-memory ones cost nothing to keep.
                let text = from_memory.then_some(text);
                Scanned {
                    path: input.path,
                    crate_root,
                    text,
                    read: true,
                    facts: None,
                    error: None,
                }
            }
        })
        .collect();

    // Second pass: files not parsed yet that mention a crate-local function
    // found to sync may call it in a loop. Repeat, since they may define
    // more such functions.
    let mut tried: HashSet<usize> = HashSet::new();
    loop {
        let results = {
            let crates = group_by_crate(&scanned);
            let mut needles_by_crate: HashMap<&Option<PathBuf>, AhoCorasick> = HashMap::new();
            for (root, members) in &crates {
                let facts: Vec<&FileFacts> = members
                    .iter()
                    .filter_map(|&i| scanned[i].facts.as_ref())
                    .collect();
                let index = CrateIndex::new(&facts);
                let summary = index.summarize();
                let names: HashSet<&str> = summary
                    .syncs
                    .keys()
                    .map(|&id| index.function(id).name.as_str())
                    .collect();
                if names.is_empty() {
                    continue;
                }
                if let Ok(needles) = AhoCorasick::new(names) {
                    needles_by_crate.insert(*root, needles);
                }
            }
            let pending: Vec<(usize, &AhoCorasick)> = crates
                .iter()
                .filter_map(|(root, members)| {
                    needles_by_crate.get(root).map(|needles| (members, needles))
                })
                .flat_map(|(members, needles)| members.iter().map(move |&i| (i, needles)))
                .filter(|&(i, _)| {
                    let file = &scanned[i];
                    file.read && file.facts.is_none() && file.error.is_none() && !tried.contains(&i)
                })
                .collect();
            if pending.is_empty() {
                break;
            }
            tried.extend(pending.iter().map(|(i, _)| *i));
            pending
                .into_par_iter()
                .filter_map(|(i, needles)| {
                    let file = &scanned[i];
                    let text: Cow<'a, str> = match &file.text {
                        Some(text) => text.clone(),
                        None => match load(
                            &Input {
                                path: file.path.clone(),
                                text: None,
                            },
                            config,
                        ) {
                            Ok(text) => text,
                            Err(error) => return Some((i, None, None, Some(error))),
                        },
                    };
                    if !needles.is_match(text.as_ref()) {
                        return None;
                    }
                    let (facts, error) = analyze(&file.path, &text, config);
                    Some((i, Some(text), facts, error))
                })
                .collect::<Vec<(
                    usize,
                    Option<Cow<'a, str>>,
                    Option<FileFacts>,
                    Option<FileError>,
                )>>()
        };
        let added = results.iter().any(|(_, _, facts, _)| facts.is_some());
        for (i, text, facts, error) in results {
            if text.is_some() {
                scanned[i].text = text;
            }
            scanned[i].facts = facts;
            scanned[i].error = error;
        }
        if !added {
            break;
        }
    }
    scanned
}

fn group_by_crate<'s>(scanned: &'s [Scanned<'_>]) -> Vec<(&'s Option<PathBuf>, Vec<usize>)> {
    let mut crates: Vec<(&Option<PathBuf>, Vec<usize>)> = Vec::new();
    let mut position: HashMap<&Option<PathBuf>, usize> = HashMap::new();
    for (i, file) in scanned.iter().enumerate() {
        let slot = *position.entry(&file.crate_root).or_insert_with(|| {
            crates.push((&file.crate_root, Vec::new()));
            crates.len() - 1
        });
        crates[slot].1.push(i);
    }
    crates
}

/// Reads (or borrows) a file's text, enforcing the size limit and UTF-8.
fn load<'a>(input: &Input<'a>, config: &Config) -> Result<Cow<'a, str>, FileError> {
    let error = |line: Option<usize>, message: String| FileError {
        file: input.path.clone(),
        line,
        message,
    };
    let too_large = |size: u64| {
        error(
            None,
            format!(
                "file is {size} bytes, larger than the limit of {} bytes; raise `max-file-size` under [lint] in devcheck.toml to lint it",
                config.max_file_size
            ),
        )
    };
    if let Some(text) = input.text {
        if text.len() as u64 > config.max_file_size {
            return Err(too_large(text.len() as u64));
        }
        return Ok(Cow::Borrowed(text));
    }
    let describe = |err: std::io::Error| error(None, format!("cannot read: {err}"));
    let size = std::fs::metadata(&input.path).map_err(describe)?.len();
    if size > config.max_file_size {
        return Err(too_large(size));
    }
    let bytes = std::fs::read(&input.path).map_err(describe)?;
    String::from_utf8(bytes).map(Cow::Owned).map_err(|err| {
        let valid = err.utf8_error().valid_up_to();
        let line = memchr::memchr_iter(b'\n', &err.as_bytes()[..valid]).count() + 1;
        error(
            Some(line),
            "not valid UTF-8; the file was not linted".into(),
        )
    })
}

/// Parses and walks one file, turning a panic into an error entry.
fn analyze(path: &Path, text: &str, config: &Config) -> (Option<FileFacts>, Option<FileError>) {
    let outcome = catch_unwind(AssertUnwindSafe(|| analyze_source(text, &config.patterns)));
    let into_error = |(line, message): AnalysisError| FileError {
        file: path.to_owned(),
        line,
        message,
    };
    match outcome {
        Ok(Ok(facts)) => (Some(facts), None),
        Ok(Err(error)) => (None, Some(into_error(error))),
        Err(panic) => {
            proc_macro2::extra::invalidate_current_thread_spans();
            let detail = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            (None, Some(into_error((None, format!("internal error while analysing this file ({detail}); the file was not linted")))))
        }
    }
}

/// Turns sites and calls in loops into findings, crate by crate.
fn findings(scanned: &[Scanned<'_>], config: &Config) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for (_, members) in group_by_crate(scanned) {
        let parsed: Vec<(usize, &FileFacts)> = members
            .iter()
            .filter_map(|&i| scanned[i].facts.as_ref().map(|f| (i, f)))
            .collect();
        let facts: Vec<&FileFacts> = parsed.iter().map(|(_, f)| *f).collect();
        let index = CrateIndex::new(&facts);
        let summary = index.summarize();
        for (scanned_index, file) in &parsed {
            let path = &scanned[*scanned_index].path;
            let mut emit = |rule: RuleId,
                            pattern: Option<usize>,
                            message: String,
                            mut notes: Vec<String>,
                            loc: Loc,
                            context: &Context,
                            guard: Option<&String>| {
                let Some(loop_id) = context.loop_id else {
                    return;
                };
                if file
                    .suppressions
                    .allows(rule, loc.line, context.statement_line)
                {
                    return;
                }
                let level = pattern
                    .and_then(|p| config.patterns.get(p))
                    .and_then(|p| p.level)
                    .unwrap_or_else(|| config.level(rule));
                let loop_line = file.loops[loop_id].line;
                let quiet = if file.loops[loop_id].has_nested_loop {
                    notes.push(format!(
                        "runs once per iteration of the loop at line {loop_line}, whose body holds a nested loop (the once-per-epoch level)"
                    ));
                    true
                } else if let Some(guard) = guard {
                    notes.push(format!("runs only when `{guard}`"));
                    true
                } else {
                    notes.push(format!(
                        "inside the loop at line {loop_line}: the host waits for the device on every iteration"
                    ));
                    false
                };
                let severity = match level {
                    Level::Allow => return,
                    Level::Note => Severity::Note,
                    _ if quiet => Severity::Note,
                    Level::Warn => Severity::Warning,
                    Level::Deny => Severity::Error,
                };
                out.push(Finding {
                    rule,
                    severity,
                    file: path.clone(),
                    line: loc.line,
                    column: loc.column,
                    end_line: loc.end_line,
                    end_column: loc.end_column,
                    message,
                    notes,
                    help: rule.info().help,
                });
            };
            for site in &file.sites {
                if site.context.loop_id.is_none() || !index.satisfied(site.requirement.as_ref()) {
                    continue;
                }
                let mut notes: Vec<String> = site.hit.note.iter().cloned().collect();
                let message = if site.via.is_empty() {
                    site.hit.message.clone()
                } else {
                    let mut steps = site.via.clone();
                    steps.push(site.hit.op.clone());
                    notes.insert(0, format!("via {}", quoted_chain(&steps)));
                    format!(
                        "{} syncs with the device: {}",
                        site.via[0], site.hit.message
                    )
                };
                emit(
                    site.hit.rule,
                    site.pattern,
                    message,
                    notes,
                    site.loc,
                    &site.context,
                    site.context.periodic.as_ref(),
                );
            }
            for call in &file.calls {
                if call.context.loop_id.is_none() {
                    continue;
                }
                let callees = index.callees(&call.callee);
                let Some(chain) =
                    index.chain_through(&summary.syncs, &callees, call.context.periodic.as_ref())
                else {
                    continue;
                };
                let notes = vec![format!("via {}", quoted_chain(&chain.steps))];
                let message = format!(
                    "`{}` syncs with the device: {}",
                    chain.steps[0], chain.message
                );
                let guard = chain.periodic.as_ref();
                emit(
                    chain.rule,
                    chain.pattern,
                    message,
                    notes,
                    call.loc,
                    &call.context,
                    guard,
                );
            }
        }
    }
    out.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
    out.dedup_by(|a, b| (&a.file, a.line, a.column, a.rule) == (&b.file, b.line, b.column, b.rule));
    out
}

fn quoted_chain(steps: &[String]) -> String {
    steps
        .iter()
        .map(|s| {
            if s.starts_with("closure `") {
                s.clone()
            } else {
                format!("`{s}`")
            }
        })
        .collect::<Vec<_>>()
        .join(" → ")
}
