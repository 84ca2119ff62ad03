//! From the crate pass's answers to findings: which reads in loops sync,
//! how loudly each is reported (the loop's level, periodic guards, code
//! outside the release hot path, the configured levels), and one finding
//! per statement listing every read in it.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::analysis::crate_pass::{Chain, CrateIndex, FnId, HotCall, LoopLevels, Summary};
use crate::analysis::facts::{CallSite, Cold, Context, FileFacts, Fix, Loc, Site};
use crate::config::{Config, Level};
use crate::engine::{group_by_workspace, workspace_index, Scanned};
use crate::prefilter;
use crate::rules::RuleId;
use crate::{Finding, Severity};

/// One read in a loop, before grouping.
struct Read {
    rule: RuleId,
    pattern: Option<usize>,
    /// Short name (`double_value`, or the first function of a chain).
    op: String,
    message: String,
    notes: Vec<String>,
    loc: Loc,
    fix: Fix,
    /// The subject is a whole loop item.
    item: bool,
    statement: usize,
    severity: Severity,
    /// Why the read runs less often than its loop's iterations, where the
    /// chain to it says so (once per epoch of a function it calls).
    less_often: Option<String>,
    /// Why a call's reads are reported elsewhere: they sit in a loop of
    /// steps of a function it reaches, which a call runs once.
    steps_inside: Option<String>,
    /// The read waits once per element of one tensor (an indexed read, at
    /// the call or down its chain): a defect even where the loop around it
    /// answers one request per iteration, since one copy would do.
    piecewise: bool,
    /// Where the read's function runs once per step (a loop over items in
    /// it copies each item once per step), the note that says so.
    per_step_function: Option<String>,
}

/// Findings for every parsed file, sorted by file, line and column.
///
/// `dirs`: the directories the inputs were, when they were all
/// directories. A workspace among them that holds a program (`fn main`),
/// or whose crates nothing outside it calls, and names no accelerator in
/// the code of any file runs everything on the CPU, where
/// nothing waits for a device: its tensors, whatever reaches them, are CPU
/// tensors. That is only asked of a workspace with findings, so the files
/// of the others are not read twice. A workspace walked from its root or
/// above is read whole, so what nothing in it calls is known too.
pub(crate) fn collect(
    scanned: &mut [Scanned<'_>],
    config: &Config,
    dirs: Option<&[PathBuf]>,
) -> Vec<Finding> {
    let workspaces: Vec<(bool, bool, Vec<usize>)> = group_by_workspace(scanned)
        .into_iter()
        .map(|(workspace, members)| {
            let whole = dirs.is_some() && workspace.is_some();
            let read_whole = workspace
                .as_ref()
                .zip(dirs)
                .is_some_and(|(root, dirs)| dirs.iter().any(|d| root.starts_with(d)));
            (whole, read_whole, members)
        })
        .collect();
    let mut out: Vec<Finding> = Vec::new();
    for (whole, read_whole, members) in workspaces {
        let (mut positions, mut index) = workspace_index(scanned, &members);
        if positions.is_empty() {
            continue;
        }
        // A branch on a `bool` parameter that no call takes is put out
        // of the hot path before anything is judged, where every call is
        // seen; the few workspaces that have one are indexed again.
        let settled = if read_whole {
            fixed_flags(&index)
        } else {
            Vec::new()
        };
        if !settled.is_empty() {
            drop(index);
            for (file, is_call, i, cold) in settled {
                let Some(facts) = scanned[positions[file]].facts.as_mut() else {
                    continue;
                };
                let context = if is_call {
                    &mut facts.calls[i].context
                } else {
                    &mut facts.sites[i].context
                };
                context.cold = Some(cold);
            }
            (positions, index) = workspace_index(scanned, &members);
        }
        let members_if_whole = read_whole.then_some(members.as_slice());
        let mut found = workspace_findings(scanned, members_if_whole, &positions, &index, config);
        if whole && !found.is_empty() && cpu_only(scanned, &members) {
            index.set_cpu_only(true);
            found = workspace_findings(scanned, members_if_whole, &positions, &index, config);
        }
        out.extend(found);
    }
    out.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
    out.dedup_by(|a, b| (&a.file, a.line, a.column, a.rule) == (&b.file, b.line, b.column, b.rule));
    out
}

/// The branches on a `bool` parameter that no call takes (`if debug { .. }`
/// where every call passes `false`), in a workspace whose every call is
/// seen: (site or call, its index, why), for the file at each index
/// position.
fn fixed_flags(index: &CrateIndex<'_>) -> Vec<(usize, bool, usize, Cold)> {
    let mut settled = Vec::new();
    let mut fixed: HashMap<(FnId, usize), Option<bool>> = HashMap::new();
    let mut decide = |file: usize, context: &Context| -> Option<Cold> {
        let flag = context.flag.as_ref().filter(|_| context.cold.is_none())?;
        let id = (file, context.function?);
        let passed = *fixed
            .entry((id, flag.param))
            .or_insert_with(|| index.fixed_argument(id, flag.param));
        (passed? != flag.on).then(|| Cold::FixedArgument {
            name: flag.name.clone(),
            on: flag.on,
            function: index.function(id).display_name(),
        })
    };
    for file in 0..index.file_count() {
        let facts = index.facts(file);
        for (i, site) in facts.sites.iter().enumerate() {
            if let Some(cold) = decide(file, &site.context) {
                settled.push((file, false, i, cold));
            }
        }
        for (i, call) in facts.calls.iter().enumerate() {
            if let Some(cold) = decide(file, &call.context) {
                settled.push((file, true, i, cold));
            }
        }
    }
    settled
}

/// Whether these files, a workspace's, name no accelerator anywhere in
/// their code and are a program (one defines `fn main`) or crates nothing
/// outside the checkout calls (none prepared for crates.io) that name the
/// CPU: a library's device is where its callers put the model, and its
/// only callers here (its tests, its examples) keep it on the CPU. A
/// library that names no device at all leaves it to callers unseen. A
/// file whose text was not kept is read again; one that cannot be read
/// counts as naming one.
fn cpu_only(scanned: &[Scanned<'_>], members: &[usize]) -> bool {
    let unseen_callers = members.iter().any(|&m| scanned[m].placement.published);
    let mut main = false;
    let mut cpu = false;
    for &m in members {
        let file = &scanned[m];
        let signs = match file.text() {
            Some(text) => prefilter::device_signs(text),
            None => match std::fs::read_to_string(&file.path) {
                Ok(text) => prefilter::device_signs(&text),
                Err(_) => return false,
            },
        };
        if signs.accelerator {
            return false;
        }
        // A build script's `fn main` runs at build time, not the program.
        main |= signs.main && !is_build_script(&file.path);
        cpu |= signs.cpu;
    }
    main || (cpu && !unseen_callers)
}

/// Whether a file is a crate's build script (`build.rs` beside its
/// `Cargo.toml`).
fn is_build_script(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "build.rs")
        && path
            .parent()
            .is_some_and(|dir| dir.join("Cargo.toml").is_file())
}

/// The findings of one workspace's parsed files (`members`: all its files,
/// where it was walked whole).
fn workspace_findings(
    scanned: &[Scanned<'_>],
    members: Option<&[usize]>,
    positions: &[usize],
    index: &CrateIndex<'_>,
    config: &Config,
) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let levels = index.loop_levels();
    let summary = index.summarize(Some(&levels));
    let hot = index.hot_functions(&levels, &summary);
    let test_only = index.test_only();
    // What nothing calls, worked out on the first read that needs it.
    let uncalled: OnceCell<HashMap<FnId, Cold>> = OnceCell::new();
    let uncalled = || {
        uncalled.get_or_init(|| {
            members
                .map(|members| index.uncalled(&workspace_texts(scanned, members)))
                .unwrap_or_default()
                .into_iter()
                .map(|(id, root)| {
                    let uncalled = Cold::Uncalled {
                        function: index.function(id).display_name(),
                        root: index.function(root).display_name(),
                    };
                    (id, uncalled)
                })
                .collect()
        })
    };
    // Where a function runs once per step, among the functions that run:
    // none for one that never runs; where the loop first found to run it
    // sits in a function that never runs, the loops of those that do are
    // looked at again (once, on the first such question).
    let live: OnceCell<HashMap<FnId, HotCall>> = OnceCell::new();
    let hot_live = |f: FnId| -> Option<&HotCall> {
        let hot_call = hot.get(&f)?;
        if !uncalled().contains_key(&hot_call.caller) {
            return Some(hot_call);
        }
        if uncalled().contains_key(&f) {
            return None;
        }
        live.get_or_init(|| {
            index.hot_functions_skipping(&levels, &summary, |id| uncalled().contains_key(&id))
        })
        .get(&f)
    };
    for (file, &position) in positions.iter().enumerate() {
        let facts = index.facts(file);
        // Where a function of this file outside test code runs once per
        // step, and the note that says so.
        let hot_here = |f: usize| {
            (!test_only.contains(&(file, f)))
                .then(|| hot_live((file, f)))
                .flatten()
        };
        let per_step_note = |(f, hot_call): (usize, &HotCall)| {
            runs_per_step(
                index,
                (file, f),
                hot_call,
                &loop_place(scanned, positions, file, hot_call),
            )
        };
        // Where a read copies each whole item of its loop, or reads each
        // parameter of a walk over a model's parameters, in a function that
        // runs once per step: it copies once per item per step.
        let per_step_copier = |read: &Read, context: &Context| {
            let in_parameter_walk = context
                .loop_id
                .is_some_and(|l| facts.loops[l].over_parameters);
            context
                .function
                .filter(|_| (read.fix == Fix::Bulk && read.item) || in_parameter_walk)
                .and_then(|f| hot_here(f).map(|hot_call| (f, hot_call)))
        };
        let mut reads = Vec::new();
        for site in &facts.sites {
            let lifted;
            let site = match lifted_loop(site, facts, file, &levels) {
                Some(outer) => {
                    lifted = Site {
                        context: site.context.in_loop(outer),
                        ..site.clone()
                    };
                    &lifted
                }
                None => site,
            };
            if site.context.loop_id.is_none() {
                // A read outside loops, in a function that runs on
                // every iteration of a per-step loop elsewhere.
                // Whether the function runs, asked last: it reads every
                // file of the workspace once.
                let hot_call = site
                    .context
                    .function
                    .filter(|&f| !test_only.contains(&(file, f)))
                    .filter(|_| site.context.periodic.is_none() && site.context.cold.is_none())
                    .filter(|&f| hot.contains_key(&(file, f)) && index.site_syncs(file, site))
                    .and_then(|f| hot_live((file, f)).map(|hot_call| (f, hot_call)));
                if let Some((f, hot_call)) = hot_call {
                    if index.site_syncs_in(file, site, hot_call) {
                        let at = loop_place(scanned, positions, file, hot_call);
                        let mut read = site_read(site);
                        read.notes.push(format!(
                            "{}: the host waits for the device once per iteration",
                            runs_per_step(index, (file, f), hot_call, &at),
                        ));
                        reads.extend(judge_hot(read, &site.context, facts, config));
                    }
                }
                continue;
            }
            if !index.site_syncs(file, site) {
                continue;
            }
            let mut read = site_read(site);
            read.per_step_function = per_step_copier(&read, &site.context)
                .filter(|(_, hot_call)| index.site_syncs_in(file, site, hot_call))
                .map(per_step_note);
            reads.extend(judge(
                read,
                &cold_context(&site.context, file, &test_only, uncalled),
                facts,
                file,
                &levels,
                config,
            ));
        }
        for call in &facts.calls {
            // A call in a short loop fixed in the source that runs no step
            // (`for lr in [a, b, c]` trying a few settings) counts in the
            // loop around it, as a read there does, unless its reads take
            // one element at a time.
            let lifted;
            let call = match call
                .context
                .loop_id
                .and_then(|l| lifted_from(l, facts, file, &levels))
            {
                Some(outer)
                    if index
                        .chain_through(&summary.syncs, file, call, &index.callees(file, call))
                        .is_some_and(|chain| chain.fix != Fix::Element) =>
                {
                    lifted = CallSite {
                        context: call.context.in_loop(outer),
                        ..call.clone()
                    };
                    &lifted
                }
                _ => call,
            };
            if call.context.loop_id.is_none() {
                reads.extend(hot_call_read(
                    index,
                    &summary,
                    &|f| hot.contains_key(&f),
                    &hot_live,
                    &test_only,
                    scanned,
                    positions,
                    file,
                    call,
                    facts,
                    config,
                ));
                continue;
            }
            let callees = index.callees(file, call);
            let Some(chain) = index.chain_through(&summary.syncs, file, call, &callees) else {
                continue;
            };
            // The reads sit in a loop of steps of the callee's own (a
            // search's iterations, an epoch's batches), not in a loop over
            // one tensor's items: they are judged at that loop.
            let steps_inside = chain.looped_steps && chain.fix != Fix::Element;
            let mut read = call_read(&chain, call, !steps_inside);
            read.steps_inside = chain.looped.as_ref().filter(|_| steps_inside).map(|function| {
                format!(
                    "`{function}` reads in a loop of steps of its own, reported there: each call runs that loop once"
                )
            });
            let level = call.context.loop_id.map(|l| levels.get(file, l));
            let generation = level.is_some_and(|l| l.generation);
            let acts = level.is_some_and(|l| l.acts);
            let walk_step = level.is_some_and(|l| l.walk_step);
            read.less_often = match (&chain.epoch, &chain.looped) {
                (Some(function), None) if !generation && !acts && !walk_step => Some(format!(
                    "`{function}` runs a loop of steps of its own and reads outside it, once per call: the call is the once-per-epoch level"
                )),
                (Some(function), None) if generation => {
                    read.notes.push(format!(
                        "`{function}` runs a loop of its own, but this loop hands a model's output on to its next iteration: each iteration is one generation step"
                    ));
                    None
                }
                (Some(function), None) if acts => {
                    read.notes.push(format!(
                        "`{function}` runs a loop of its own, but this loop runs a model and steps an environment with its answer: each iteration is one environment step"
                    ));
                    None
                }
                (Some(function), None) => {
                    read.notes.push(format!(
                        "`{function}` walks items through a model, but this loop repeats around it: each iteration is one step"
                    ));
                    None
                }
                _ => None,
            };
            // A call copies once per item per step as a read written there would.
            read.per_step_function = per_step_copier(&read, &call.context).map(per_step_note);
            let around = cold_context(&call.context, file, &test_only, uncalled).into_owned();
            // A whole copy bound to a local a writer then takes is what is
            // written out.
            let written = chain.written_by(call).map(|writer| Cold::Written {
                writer: writer.to_owned(),
            });
            let context = Context {
                periodic: chain.periodic.clone(),
                cold: chain.cold.clone().or(around.cold.clone()).or(written),
                ..around
            };
            reads.extend(judge(read, &context, facts, file, &levels, config));
        }
        out.extend(per_statement(reads, &scanned[position].path));
    }
    out
}

/// A call outside loops in a function that runs on every iteration of a
/// per-step loop elsewhere, whose callee reads once per call (not in a loop
/// of its own, not once per epoch, not behind a guard): one wait per
/// iteration of that loop, reported at the call as the read inside is.
#[allow(clippy::too_many_arguments)]
fn hot_call_read<'h>(
    index: &CrateIndex<'_>,
    summary: &Summary,
    is_hot: &impl Fn(FnId) -> bool,
    hot: &impl Fn(FnId) -> Option<&'h HotCall>,
    test_only: &HashSet<FnId>,
    scanned: &[Scanned<'_>],
    positions: &[usize],
    file: usize,
    call: &CallSite,
    facts: &FileFacts,
    config: &Config,
) -> Option<Read> {
    let f = call.context.function?;
    if test_only.contains(&(file, f))
        || call.context.periodic.is_some()
        || call.context.cold.is_some()
    {
        return None;
    }
    if !is_hot((file, f)) {
        return None;
    }
    let callees = index.callees(file, call);
    let chain = index.chain_through(&summary.syncs, file, call, &callees)?;
    if chain.written_by(call).is_some() {
        return None;
    }
    // Through a dispatch where only some implementations read, the read
    // inside is reported where it is; the call adds nothing certain.
    // A callee reading in a loop over items of its own (each parameter's
    // norm) waits that many times per call, so per step here; one whose
    // loop runs steps is reported at that loop.
    if chain.looped_steps
        || chain.periodic.is_some()
        || chain.cold.is_some()
        || chain.reach.is_some()
    {
        return None;
    }
    // Whether the function runs, asked last: it reads every file of the
    // workspace once. A callee that holds a loop of steps of its own and
    // reads outside it reads once per epoch, unless a generation loop runs
    // this function: then once per its step.
    let hot_call = hot((file, f))?;
    if chain.epoch.is_some() && !hot_call.generation {
        return None;
    }
    let at = loop_place(scanned, positions, file, hot_call);
    let mut read = call_read(&chain, call, true);
    read.notes.push(format!(
        "{}: the host waits for the device once per iteration",
        runs_per_step(index, (file, f), hot_call, &at),
    ));
    judge_hot(read, &call.context, facts, config)
}

/// That a function runs on every iteration of a per-step loop (at `at`),
/// naming the function that loop calls where it is another one.
fn runs_per_step(index: &CrateIndex<'_>, function: FnId, hot_call: &HotCall, at: &str) -> String {
    let name = index.function(function).display_name();
    if hot_call.frame {
        let callback = index.function(hot_call.callee).display_name();
        return if function == hot_call.callee {
            format!("`{name}` runs once per frame: the framework calls it on every frame ({at})")
        } else {
            format!("`{name}` runs once per frame, through `{callback}`, which the framework calls on every frame ({at})")
        };
    }
    if function == hot_call.callee {
        format!("`{name}` runs on every iteration of the loop at {at}")
    } else {
        format!(
            "`{name}` runs on every iteration of the loop at {at}, through `{}`",
            index.function(hot_call.callee).display_name()
        )
    }
}

/// A call's read through the chain to the operation it reaches: the
/// operation's rule and advice at the call, noted with the chain, and with
/// the callee's own loop when `looped_note` and the chain has one.
fn call_read(chain: &Chain, call: &CallSite, looped_note: bool) -> Read {
    Read {
        rule: chain.rule,
        pattern: chain.pattern,
        op: format!("`{}`", chain.steps[0]),
        message: format!(
            "`{}` syncs with the device: {}{}",
            chain.steps[0],
            chain.message,
            chain.reach.map(|r| r.to_string()).unwrap_or_default()
        ),
        notes: std::iter::once(format!("via {}", quoted_chain(&chain.steps)))
            .chain(chain.looped.iter().filter(|_| looped_note).map(|function| {
                format!("`{function}` reads in a loop of its own: each call waits for the device once per iteration of it")
            }))
            .collect(),
        loc: call.loc,
        fix: chain.fix,
        item: call.item,
        statement: call.context.statement,
        severity: Severity::Warning,
        piecewise: chain.fix == Fix::Element,
        steps_inside: None,
        per_step_function: None,
        less_often: None,
    }
}

/// Where a per-step loop is, for a note: a line of this file, or another
/// file's path as the lint was given it, relative to where it runs (never
/// absolute where it need not be).
fn loop_place(
    scanned: &[Scanned<'_>],
    positions: &[usize],
    file: usize,
    hot_call: &HotCall,
) -> String {
    if hot_call.file == file {
        format!("line {}", hot_call.loop_line)
    } else {
        let path = &scanned[positions[hot_call.file]].path;
        let shown = std::env::current_dir()
            .ok()
            .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf());
        format!("{}:{}", shown.display(), hot_call.loop_line)
    }
}

/// The context of code in a function only tests call (test code) or that
/// nothing calls, unless something colder already holds.
fn cold_context<'c, 'u>(
    context: &'c Context,
    file: usize,
    test_only: &HashSet<FnId>,
    uncalled: impl FnOnce() -> &'u HashMap<FnId, Cold>,
) -> Cow<'c, Context> {
    let Some(f) = context.function.filter(|_| context.cold.is_none()) else {
        return Cow::Borrowed(context);
    };
    let cold = if test_only.contains(&(file, f)) {
        Cold::Test
    } else if let Some(uncalled) = uncalled().get(&(file, f)) {
        uncalled.clone()
    } else {
        return Cow::Borrowed(context);
    };
    Cow::Owned(Context {
        cold: Some(cold),
        ..context.clone()
    })
}

/// The source of every file of a workspace (`members`), parsed or not;
/// `None` for one that cannot be read again (then nothing counts as
/// uncalled). A test target's file names nothing: what only tests use is
/// no more called in a release build than what nothing uses.
fn workspace_texts<'s>(scanned: &'s [Scanned<'_>], members: &[usize]) -> Vec<Option<Cow<'s, str>>> {
    members
        .iter()
        .map(|&m| match scanned[m].text() {
            _ if scanned[m].placement.scope.is_test() => Some(Cow::Borrowed("")),
            Some(text) => Some(Cow::Borrowed(text)),
            None => std::fs::read_to_string(&scanned[m].path)
                .ok()
                .map(Cow::Owned),
        })
        .collect()
}

/// A read at a site, before its severity is decided.
fn site_read(site: &Site) -> Read {
    let mut notes: Vec<String> = site.hit.note.iter().cloned().collect();
    let (op, message) = if site.via.is_empty() {
        (site.hit.op.clone(), site.hit.message.clone())
    } else {
        let mut steps = site.via.clone();
        steps.push(site.hit.op.clone());
        notes.insert(0, format!("via {}", quoted_chain(&steps)));
        (
            site.via[0].clone(),
            format!(
                "{} syncs with the device: {}",
                site.via[0], site.hit.message
            ),
        )
    };
    Read {
        rule: site.hit.rule,
        pattern: site.hit.pattern,
        op,
        message,
        notes,
        loc: site.loc,
        fix: site.hit.fix,
        item: site.item,
        statement: site.context.statement,
        severity: Severity::Warning,
        less_often: None,
        steps_inside: None,
        per_step_function: None,
        piecewise: site.hit.fix == Fix::Element,
    }
}

/// A read's configured level (its custom pattern's, else its rule's), or
/// `None` where an allow comment suppresses it.
fn configured_level(
    read: &Read,
    context: &Context,
    facts: &FileFacts,
    config: &Config,
) -> Option<Level> {
    if facts
        .suppressions
        .allows(read.rule, read.loc.line, context.statement_line)
    {
        return None;
    }
    Some(
        read.pattern
            .and_then(|p| config.patterns.get(p))
            .and_then(|p| p.level)
            .unwrap_or_else(|| config.level(read.rule)),
    )
}

/// Decides the severity of a read outside loops in a function that runs
/// once per step: the configured level, or dropped by an allow comment.
fn judge_hot(
    mut read: Read,
    context: &Context,
    facts: &FileFacts,
    config: &Config,
) -> Option<Read> {
    let level = configured_level(&read, context, facts, config)?;
    read.severity = match level {
        Level::Allow => return None,
        Level::Note => Severity::Note,
        Level::Warn => Severity::Warning,
        Level::Deny => Severity::Error,
    };
    Some(read)
}

/// The loop a read counts in when its own loop is a short sequence
/// fixed in the source that runs no step and encloses none (`for i in
/// 0..8` over a model's eight outputs, `for key in ["w1", "b1"]`) and it
/// reads a whole value bound anew each time round, not one element of a
/// tensor nor a value from outside: the loop around that one (or none).
/// `None` where the read's own loop counts.
fn lifted_loop(
    site: &Site,
    facts: &FileFacts,
    file: usize,
    levels: &LoopLevels,
) -> Option<Option<usize>> {
    if site.hit.fix == Fix::Element || !site.varies {
        return None;
    }
    lifted_from(site.context.loop_id?, facts, file, levels)
}

/// The loop around the fixed, stepless loops a read or call sits in
/// (`Some(None)` where none is), or `None` where its own loop counts.
fn lifted_from(
    loop_id: usize,
    facts: &FileFacts,
    file: usize,
    levels: &LoopLevels,
) -> Option<Option<usize>> {
    let counting = levels.counting_loop(&facts.loops, file, loop_id);
    (counting != Some(loop_id)).then_some(counting)
}

/// Decides a read's severity and the note that says why, or drops it
/// (allowed by a comment or the configuration, or outside the hot path).
fn judge(
    mut read: Read,
    context: &Context,
    facts: &FileFacts,
    file: usize,
    levels: &LoopLevels,
    config: &Config,
) -> Option<Read> {
    let loop_id = context.loop_id?;
    let level = configured_level(&read, context, facts, config)?;
    let loop_line = facts.loops[loop_id].line;
    let loop_level = levels.get(file, loop_id);
    // Each whole item of a loop that runs no step copied once, or each
    // parameter of a model read in a walk over them that runs no step
    // (checking the weights once they are loaded).
    let over_parameters = facts.loops[loop_id].over_parameters;
    let item_copy =
        ((read.fix == Fix::Bulk && read.item) || over_parameters) && loop_level.stepless;
    let quiet_because = match &context.cold {
        Some(Cold::Test) if !config.hot.tests => return None,
        Some(Cold::DebugAssertion) if !config.hot.debug_assertions => return None,
        Some(Cold::Failure) => return None,
        Some(Cold::DebugLog(name)) if !config.hot.debug_logs => Some(format!(
            "`{name}!` evaluates its arguments only when `{name}` logging is enabled"
        )),
        Some(Cold::Disabled {
            condition,
            otherwise,
        }) if matches!(condition.as_str(), "true" | "false") => Some(format!(
            "sits in a branch the source switches off (`if {condition}`{})",
            if *otherwise { ", its `else`" } else { "" }
        )),
        Some(Cold::Disabled {
            condition,
            otherwise,
        }) => Some(format!(
            "runs only when `{condition}` is {}, which the file's constants rule out",
            !otherwise
        )),
        Some(Cold::FixedArgument { name, on, function }) => Some(format!(
            "runs only when `{name}` is {on}, and every call of `{function}` passes {}",
            !on
        )),
        Some(Cold::Export) => Some(
            "copies the whole tensor for a function that writes it out: the copy is the point"
                .to_owned(),
        ),
        Some(Cold::Written { writer }) => Some(format!(
            "copies the whole tensor that `{writer}` then writes out: the copy is the point"
        )),
        Some(Cold::Feature(feature)) => Some(format!(
            "only built with the cargo feature `{feature}`, which no default build of its workspace turns on"
        )),
        Some(Cold::Uncalled { function, root }) if function == root => {
            Some(format!("no call in the workspace reaches `{function}`"))
        }
        Some(Cold::Uncalled { function, root }) => Some(format!(
            "`{function}` runs only from `{root}`, which no call in the workspace reaches"
        )),
        _ => None,
    };
    let quiet_because = quiet_because
        .or_else(|| read.less_often.clone())
        .or_else(|| context.periodic.as_ref().map(|g| format!("runs only when `{g}`")))
        .or_else(|| {
            loop_level.per_epoch.map(|inner| {
                format!(
                    "runs once per iteration of the loop at line {loop_line}, which runs the steps at line {inner} (the once-per-epoch level)"
                )
            })
        })
        .or_else(|| {
            (loop_level.request && !read.piecewise).then(|| {
                if facts.loops[loop_id].listed {
                    format!(
                        "runs once per input of the list written out for the loop at line {loop_line}: a few inputs, each answered once"
                    )
                } else if facts.loops[loop_id].timed && !facts.loops[loop_id].request {
                    format!(
                        "runs once per request of the latency benchmark at line {loop_line}, which is timed whole"
                    )
                } else {
                    format!("runs once per request taken by the loop at line {loop_line}")
                }
            })
        })
        .or_else(|| read.steps_inside.clone())
        .or_else(|| {
            // Copying each whole item of a collection (serialising
            // tensors, handing each input to another runtime) is the
            // loop's purpose, not a stall between steps.
            (item_copy && read.per_step_function.is_none()).then(|| {
                if over_parameters {
                    format!(
                        "reads each parameter once in the walk over the model's parameters at line {loop_line}, which runs no training or generation step"
                    )
                } else {
                    format!(
                        "copies each whole item once in the loop at line {loop_line}, which runs no training or generation step"
                    )
                }
            })
        });
    let quiet = quiet_because.is_some();
    let per_step = read
        .per_step_function
        .take()
        .filter(|_| !quiet && item_copy);
    let element_iter = facts.loops[loop_id].element_iter;
    if let Some(per_step) = per_step {
        read.notes.push(if over_parameters {
            format!("{per_step}: it reads each parameter of the walk at line {loop_line} once per iteration")
        } else {
            format!("{per_step}: it copies each item of the loop at line {loop_line} once per iteration")
        });
    } else if quiet || !element_iter {
        read.notes.push(quiet_because.unwrap_or_else(|| {
            format!(
                "inside the loop at line {loop_line}: the host waits for the device on every iteration"
            )
        }));
    }
    read.severity = match level {
        Level::Allow => return None,
        Level::Note => Severity::Note,
        _ if quiet => Severity::Note,
        Level::Warn => Severity::Warning,
        Level::Deny => Severity::Error,
    };
    Some(read)
}

/// One finding per statement and rule: the first read's place and
/// message, every read listed.
fn per_statement(mut reads: Vec<Read>, path: &Path) -> Vec<Finding> {
    reads.sort_by_key(|r| (r.statement, r.rule, r.loc));
    let mut out: Vec<Finding> = Vec::new();
    let mut start = 0;
    while start < reads.len() {
        let key = (reads[start].statement, reads[start].rule);
        let end = start
            + reads[start..]
                .iter()
                .take_while(|r| (r.statement, r.rule) == key)
                .count();
        out.push(merge(&reads[start..end], path));
        start = end;
    }
    out
}

fn merge(group: &[Read], path: &Path) -> Finding {
    let first = &group[0];
    let severity = group
        .iter()
        .map(|r| r.severity)
        .max()
        .unwrap_or(first.severity);
    // The advice and the context come from the reads that set the severity.
    let loudest: Vec<&Read> = group.iter().filter(|r| r.severity == severity).collect();
    let fixes: Vec<Fix> = loudest.iter().map(|r| r.fix).collect();
    let last = group
        .iter()
        .map(|r| r.loc)
        .max_by_key(|l| (l.end_line, l.end_column))
        .unwrap_or(first.loc);
    let (message, mut notes) = if group.len() == 1 {
        (first.message.clone(), first.notes.clone())
    } else {
        let ops: Vec<String> = group.iter().map(|r| quoted(&r.op)).collect();
        let mut notes: Vec<String> = group
            .iter()
            .map(|r| format!("{}:{}: {}", r.loc.line, r.loc.column, r.message))
            .collect();
        for read in &loudest {
            for note in &read.notes {
                if !notes.contains(note) {
                    notes.push(note.clone());
                }
            }
        }
        (
            format!(
                "{} reads in one statement wait for the device: {}",
                group.len(),
                ops.join(", ")
            ),
            notes,
        )
    };
    notes.dedup();
    Finding {
        rule: first.rule,
        severity: group
            .iter()
            .map(|r| r.severity)
            .max()
            .unwrap_or(first.severity),
        file: path.to_owned(),
        line: first.loc.line,
        column: first.loc.column,
        end_line: last.end_line,
        end_column: last.end_column,
        message,
        notes,
        help: first.rule.rule().help(&fixes),
    }
}

fn quoted_chain(steps: &[String]) -> String {
    steps
        .iter()
        .map(|s| quoted(s))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// An operation or step in backticks, unless it quotes itself (`` `f` ``,
/// ``closure `log` ``).
fn quoted(op: &str) -> String {
    if op.starts_with('`') || op.starts_with("closure `") {
        op.to_owned()
    } else {
        format!("`{op}`")
    }
}
