//! A lint run: read, prefilter, parse in parallel, resolve per workspace,
//! report.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use aho_corasick::AhoCorasick;
use rayon::prelude::*;

use crate::analysis::crate_pass::{CrateIndex, FileInfo, Unit};
use crate::analysis::facts::{Cold, FileFacts};
use crate::analysis::hot_path::Features;
use crate::analysis::scope::{file_scope_in, FileScope, Target};
use crate::analysis::{analyze_source, AnalysisError};
use crate::config::Config;
use crate::workspace::{Layout, Membership};
use crate::{findings, prefilter, rules, walk, FileError, Report};

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
    // Only directories say what a whole program is: a file handed over
    // alone (a pre-commit hook's staged files) may take its device from
    // one that was not.
    let whole = !paths.is_empty() && paths.iter().all(|p| p.is_dir());
    run(inputs, walked.errors, config, whole.then_some(paths))
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
    run(inputs, Vec::new(), config, None)
}

struct Input<'a> {
    path: PathBuf,
    text: Option<&'a str>,
}

/// Where a file sits: its crate and workspace, its unit and module, and
/// how it is compiled.
pub(crate) struct Placement {
    pub(crate) member: Membership,
    pub(crate) scope: FileScope,
    pub(crate) features: Arc<Features>,
    /// The crate's name, for paths from sibling crates.
    pub(crate) crate_name: Option<String>,
    /// Code outside the checkout calls the crate's functions: it is
    /// prepared for crates.io, or its workspace names a member the checkout
    /// lacks (see [`Layout::called_from_elsewhere`]).
    pub(crate) published: bool,
    /// Cargo refuses to build the crate: its workspace does not hold it.
    pub(crate) outside_workspace: bool,
    /// The file's crate cannot use tch (see [`Layout::uses_tch`]): its
    /// tensors are another library's.
    pub(crate) without_tch: bool,
    /// The file is compiled only into a program: a binary or example target,
    /// or `src/` of a crate without a library. Like rustc's `dead_code`,
    /// what its `main` cannot reach never runs.
    pub(crate) program: bool,
    /// A feature the file's target requires (`required-features`) that the
    /// default build leaves off: cargo builds no such target by default.
    pub(crate) feature_off: Option<String>,
}

impl Placement {
    /// A file of a crate that is in none of its targets: not under `src/`,
    /// `examples/`, `tests/` or `benches/`, not a declared target's path,
    /// not `build.rs`. Cargo never compiles it.
    fn outside_targets(&self) -> bool {
        self.member.crate_root.is_some()
            && matches!(&self.scope.target, Target::Other(dir) if dir != "build")
    }

    /// A file cargo never compiles: outside its crate's targets, or in a
    /// crate its workspace does not hold.
    fn never_compiled(&self) -> bool {
        self.outside_targets() || self.outside_workspace
    }
}

/// One file after the first pass.
pub(crate) struct Scanned<'a> {
    pub(crate) path: PathBuf,
    pub(crate) placement: Placement,
    /// Kept for parsed files (rendering) and in-memory inputs (second pass).
    text: Option<Cow<'a, str>>,
    read: bool,
    pub(crate) facts: Option<FileFacts>,
    pub(crate) error: Option<FileError>,
}

impl Scanned<'_> {
    /// The text, where it was kept (parsed files, in-memory inputs).
    pub(crate) fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }
}

/// `whole`: the inputs are whole directories, so a workspace's files
/// among them are all of its program (see [`findings::collect`]).
fn run(
    inputs: Vec<Input<'_>>,
    mut errors: Vec<FileError>,
    config: &Config,
    dirs: Option<&[PathBuf]>,
) -> Report {
    let whole = dirs.is_some();
    let mut layout = Layout::new(&config.hot.features);
    let placements: Vec<Placement> = inputs
        .iter()
        .map(|i| {
            let member = layout.membership(&i.path);
            let root = member.crate_root.as_deref();
            let declared = layout.declared_targets(root);
            let scope = file_scope_in(&i.path, root, &declared);
            let features = layout.features(root);
            let feature_off = declared
                .missing_feature(&scope.target, |f| features.has(f))
                .map(str::to_owned);
            let crate_name = root.and_then(|root| layout.crate_name(root));
            let outside_workspace = root.is_some_and(|root| layout.outside_its_workspace(root));
            let without_tch = root.is_some_and(|root| !layout.uses_tch(root));
            let program = match &scope.target {
                Target::Bin(_) | Target::Example(_) => true,
                Target::Lib => root.is_some_and(|root| {
                    declared.lib.is_none() && !root.join("src/lib.rs").is_file()
                }),
                _ => false,
            };
            // No other crate calls into a program, published or not, and
            // whatever members its workspace lacks.
            let published = !program && root.is_some_and(|root| layout.called_from_elsewhere(root));
            Placement {
                member,
                scope,
                features,
                crate_name,
                published,
                outside_workspace,
                without_tch,
                program,
                feature_off,
            }
        })
        .collect();
    // In a walked directory, a file of a crate that no target of it holds
    // (`old/main2.rs` beside `src/`, not a declared target or `build.rs`),
    // or of a crate its workspace does not hold, is never compiled, so it
    // has nothing to report. A file handed over by name is linted as asked.
    // So is a loose file of a walked tree that holds crates, outside all of
    // them (`snippets/notes.rs` beside `inference/Cargo.toml`); a tree of
    // loose files only is linted as it is.
    let holds_crates = placements.iter().any(|p| p.member.crate_root.is_some());
    let (inputs, placements): (Vec<Input<'_>>, Vec<Placement>) = inputs
        .into_iter()
        .zip(placements)
        .filter(|(_, placement)| {
            !(whole
                && (placement.never_compiled()
                    || (holds_crates && placement.member.crate_root.is_none())))
        })
        .unzip();
    let pool = rayon::ThreadPoolBuilder::new()
        .stack_size(WORKER_STACK_SIZE)
        .thread_name(|i| format!("devcheck-lint-{i}"))
        .build();
    let work = || first_and_second_pass(inputs, placements, config);
    let mut scanned = match &pool {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    };
    crate::compiled_out::mark(&mut scanned);
    let mut report = Report {
        files_scanned: scanned.iter().filter(|s| s.read).count(),
        files_parsed: scanned.iter().filter(|s| s.facts.is_some()).count(),
        ..Report::default()
    };
    // A file of a walked tree that no `mod` item declares is never
    // compiled either: it reports nothing, nothing calls into it, and
    // what it names calls nothing (an older `train_epoch` that calls the
    // live one's `train_batch` keeps neither alive).
    if whole {
        for i in crate::compiled_out::undeclared(&scanned) {
            scanned[i].facts = None;
            scanned[i].error = None;
            scanned[i].text = Some(Cow::Borrowed(""));
        }
    }
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
    report.findings = findings::collect(&mut scanned, config, dirs);
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

fn first_and_second_pass<'a>(
    inputs: Vec<Input<'a>>,
    placements: Vec<Placement>,
    config: &Config,
) -> Vec<Scanned<'a>> {
    let everything = rules::registered()
        .iter()
        .any(|rule| rule.parses_every_file(config));
    let mut scanned: Vec<Scanned<'a>> = inputs
        .into_par_iter()
        .zip(placements)
        .map(|(input, placement)| {
            let from_memory = input.text.is_some();
            let text = match load(&input, config) {
                Ok(text) => text,
                Err(error) => {
                    return Scanned {
                        path: input.path,
                        placement,
                        text: None,
                        read: false,
                        facts: None,
                        error: Some(error),
                    };
                }
            };
            let generated = prefilter::is_generated(&text);
            if !generated && (everything || prefilter::is_candidate(&text)) {
                let (facts, error) = analyze(&input.path, &text, config, &placement);
                Scanned {
                    path: input.path,
                    placement,
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
                    placement,
                    text,
                    read: true,
                    facts: None,
                    error: None,
                }
            }
        })
        .collect();

    // Second pass: files not parsed yet that mention a crate-local function
    // found to sync, or its type, may call it in a loop or say what it is
    // called on. Repeat, since they may define
    // more such functions: a file that named none of the first ones is
    // looked at again for the names found since (`trader.on_candle(c)` in
    // `main.rs`, once `on_candle` is found to reach `Model::act`).
    let mut searched: HashMap<Option<PathBuf>, HashSet<String>> = HashMap::new();
    loop {
        let results = {
            let crates = group_by_workspace(&scanned);
            let mut needles_by_crate: HashMap<&Option<PathBuf>, AhoCorasick> = HashMap::new();
            for (root, members) in &crates {
                let (_, index) = workspace_index(&scanned, members);
                let summary = index.summarize(None);
                // A syncing method's type too: a file that only names it
                // (`pub type SBertRT = SBert<RustTokenizers>`, a re-export)
                // says what a call's receiver is.
                let known = searched.entry((*root).clone()).or_default();
                let names: HashSet<&str> = summary
                    .syncs
                    .keys()
                    .flat_map(|&id| {
                        let function = index.function(id);
                        std::iter::once(function.name.as_str()).chain(function.owner.as_deref())
                    })
                    .filter(|name| !known.contains(*name))
                    .collect();
                if names.is_empty() {
                    continue;
                }
                known.extend(names.iter().map(|name| name.to_string()));
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
                    file.read && file.facts.is_none() && file.error.is_none()
                })
                .collect();
            if pending.is_empty() {
                break;
            }
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
                    if !needles.is_match(text.as_ref()) || prefilter::is_generated(&text) {
                        return None;
                    }
                    let (facts, error) = analyze(&file.path, &text, config, &file.placement);
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

/// The files of each workspace (files outside any crate form one group).
pub(crate) fn group_by_workspace<'s>(
    scanned: &'s [Scanned<'_>],
) -> Vec<(&'s Option<PathBuf>, Vec<usize>)> {
    let mut groups: Vec<(&Option<PathBuf>, Vec<usize>)> = Vec::new();
    let mut position: HashMap<&Option<PathBuf>, usize> = HashMap::new();
    for (i, file) in scanned.iter().enumerate() {
        let key = &file.placement.member.workspace;
        let slot = *position.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[slot].1.push(i);
    }
    groups
}

/// The crate index of one workspace's parsed files, with the position in
/// `scanned` of each indexed file.
pub(crate) fn workspace_index<'s>(
    scanned: &'s [Scanned<'_>],
    members: &[usize],
) -> (Vec<usize>, CrateIndex<'s>) {
    let mut crate_roots: Vec<&Option<PathBuf>> = Vec::new();
    let mut crate_names: Vec<Option<String>> = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut positions = Vec::new();
    let mut files = Vec::new();
    for &i in members {
        let file = &scanned[i];
        let Some(facts) = &file.facts else {
            continue;
        };
        let placement = &file.placement;
        let krate = match crate_roots
            .iter()
            .position(|r| **r == placement.member.crate_root)
        {
            Some(k) => k,
            None => {
                crate_roots.push(&placement.member.crate_root);
                crate_names.push(placement.crate_name.clone());
                crate_roots.len() - 1
            }
        };
        let unit = Unit {
            krate,
            target: placement.scope.target.clone(),
        };
        let unit = match units.iter().position(|u| *u == unit) {
            Some(u) => u,
            None => {
                units.push(unit);
                units.len() - 1
            }
        };
        positions.push(i);
        files.push(FileInfo {
            facts,
            unit,
            module: placement.scope.module.clone(),
            published: placement.published,
            program: placement.program,
        });
    }
    (positions, CrateIndex::new(files, units, crate_names))
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
fn analyze(
    path: &Path,
    text: &str,
    config: &Config,
    placement: &Placement,
) -> (Option<FileFacts>, Option<FileError>) {
    let file_cold = placement.scope.is_test().then_some(Cold::Test);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        analyze_source(text, &config.patterns, &placement.features, file_cold)
    }));
    let into_error = |(line, message): AnalysisError| FileError {
        file: path.to_owned(),
        line,
        message,
    };
    match outcome {
        Ok(Ok(mut facts)) => {
            // A crate that cannot use tch holds no tch operation: its
            // `Tensor` is another library's (a burn or candle study beside
            // the tch ones), unless the file names tch itself. Its calls
            // into crates that do are still followed, and the
            // configuration's own patterns still apply.
            if placement.without_tch && !crate::prefilter::names_tch_crate(text) {
                facts.sites.retain(|site| site.hit.pattern.is_some());
            }
            (Some(facts), None)
        }
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
