//! Readbacks: every host sync of the step, wrapped in `devcheck::readbacks` or
//! not, seen by the op observer on every device. Counted per step against the
//! case's budget, named by the user's line, and kept as a reviewed snapshot of
//! sites (file, enclosing function, what reads, how often per step), so that a
//! pull request that adds a read to the hot path shows up in review while a
//! comment or a moved function does not. On the CPU the same reads are the
//! places that will sync on an accelerator. On CUDA, sync-debug mode is a
//! second witness, and where the two disagree the report says so.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use devcheck_report::metrics::ReadbacksMetrics;

use super::state::CaseState;
use super::Verdict;
use crate::case::Case;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::observer::findings::{Analysis, HostSync, PlacementFinding, SyncKind};
use crate::observer::sites::{self, Site};
use crate::observer::{self, Expectation};
use crate::shim::{self, SyncDebugMode, WarningCapture};
use crate::trainer::Trainer;

/// Steps measured by the check (after one warm-up step).
const MEASURED_STEPS: u64 = 3;

/// A read as the snapshot keeps it: what changes only when the reads change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ReadKey {
    file: String,
    function: String,
    what: String,
    kind: SyncKind,
    intended: Option<String>,
}

impl ReadKey {
    fn of(sync: &HostSync) -> Self {
        let site = sync.call.site.as_ref();
        Self {
            file: site.map_or_else(|| "(no user frame)".to_owned(), |s| s.file.clone()),
            function: site.map_or_else(|| "?".to_owned(), |s| s.function.clone()),
            what: sync.what(),
            kind: sync.kind,
            intended: sync.call.intended.clone(),
        }
    }

    fn snapshot_line(&self, per_step: usize) -> String {
        format!("{}{per_step}{}", self.line_head(), self.line_tail())
    }

    /// A snapshot line's text before its count (`… (scalar read) ×`).
    fn line_head(&self) -> String {
        format!(
            "{} · {} · {} ({}) ×",
            self.file,
            self.function,
            self.what,
            self.kind.describe()
        )
    }

    /// A snapshot line's text after its count.
    fn line_tail(&self) -> String {
        self.intended
            .as_ref()
            .map_or(String::new(), |w| format!(", intended ({w})"))
    }

    /// The count of this read in a snapshot line, if the line is this read's.
    fn count_in(&self, line: &str) -> Option<usize> {
        line.strip_prefix(&self.line_head())?
            .strip_suffix(&self.line_tail())?
            .parse()
            .ok()
    }
}

/// What the check saw of one read across the measured steps.
#[derive(Default)]
struct Seen {
    per_step: Vec<usize>,
    lines: BTreeSet<Site>,
    in_backward: bool,
}

/// A sync CUDA's sync-debug mode reported, at the user's line where a backtrace told.
struct Witnessed {
    site: Option<String>,
    message: String,
}

/// Runs `body` with CUDA sync-debug mode on (warn), returning the syncs it caught.
fn with_sync_debug<T>(body: impl FnOnce() -> T) -> Result<(T, Vec<Witnessed>), TrialError> {
    let capture = WarningCapture::start()?;
    let previous = shim::set_sync_debug_mode(SyncDebugMode::Warn)?;
    let value = body();
    shim::set_sync_debug_mode(previous)?;
    let witnessed = capture
        .warnings()
        .into_iter()
        .filter(|w| w.message.contains("synchroniz"))
        .map(|w| Witnessed {
            site: w.caller.map(|c| normalize_caller(&c)),
            message: crate::cause::torch_message(&w.message),
        })
        .collect();
    Ok((value, witnessed))
}

/// `./src/train.rs:12:9` (a std backtrace's path) as the observer names it: `src/train.rs:12`.
fn normalize_caller(caller: &str) -> String {
    let mut parts = caller.rsplitn(3, ':');
    let (_column, line, file) = (parts.next(), parts.next(), parts.next());
    match (file, line) {
        (Some(file), Some(line)) => format!("{}:{line}", sites::repository_relative(file)),
        _ => caller.to_owned(),
    }
}

/// Counts host syncs per step against the budget and snapshots their sites.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    trainer.run_step(0)?;
    let expect = Expectation {
        device,
        kind: case.kind(),
    };
    let sync_debug = matches!(device, DeviceSpec::Cuda(_));
    let mut per_step = Vec::new();
    let mut seen: BTreeMap<ReadKey, Seen> = BTreeMap::new();
    let mut witnessed: Vec<Witnessed> = Vec::new();
    // Host-to-device copies: sync-debug mode flags those from pageable memory,
    // the placement check reports them; they are not reads.
    let mut copies_in: BTreeSet<String> = BTreeSet::new();
    for step in 1..=MEASURED_STEPS {
        let batch = trainer.batch(step)?;
        let mut observed = || observer::observe(expect, || trainer.step(&batch));
        let (observed, caught) = if sync_debug {
            with_sync_debug(observed)?
        } else {
            (observed(), Vec::new())
        };
        let (result, trace) = observed?;
        result?;
        witnessed.extend(caught);
        let analysis =
            Analysis::new(&trace, expect).with_host_batch(trainer.host_batch_storages(&batch));
        let fallen_back: BTreeSet<usize> = analysis.fallbacks().into_iter().map(|f| f.0).collect();
        if sync_debug {
            let tops: Vec<usize> = fallen_back.iter().copied().collect();
            for finding in analysis.placement(&tops) {
                if let (
                    PlacementFinding::HostToDevice { .. } | PlacementFinding::BatchUpload { .. },
                    Some(site),
                ) = (&finding, finding.call().site.as_ref())
                {
                    copies_in.insert(format!("{}:{}", site.file, site.line));
                }
            }
        }
        // A fallback's copies are the fallback check's to report.
        let syncs: Vec<HostSync> = analysis
            .host_syncs()
            .into_iter()
            .filter(|s| !fallen_back.contains(&s.top))
            .collect();
        per_step.push(syncs.len());
        let mut this_step: BTreeMap<ReadKey, usize> = BTreeMap::new();
        for sync in &syncs {
            let key = ReadKey::of(sync);
            *this_step.entry(key.clone()).or_default() += 1;
            let entry = seen.entry(key).or_default();
            entry.lines.extend(sync.call.site.clone());
            entry.in_backward |= sync.in_backward;
        }
        for (key, entry) in seen.iter_mut() {
            entry
                .per_step
                .push(this_step.get(key).copied().unwrap_or(0));
        }
    }
    for entry in seen.values_mut() {
        // Reads first seen after step 1 missed the earlier steps.
        while entry.per_step.len() < per_step.len() {
            entry.per_step.insert(0, 0);
        }
    }

    let observed_lines: BTreeSet<String> = seen
        .values()
        .flat_map(|s| s.lines.iter().map(|l| format!("{}:{}", l.file, l.line)))
        .collect();
    let only_witness: BTreeMap<String, usize> =
        witnessed.iter().fold(BTreeMap::new(), |mut acc, w| {
            let site = w
                .site
                .clone()
                .unwrap_or_else(|| "unknown (no Rust frame)".into());
            if !observed_lines.contains(&site) && !copies_in.contains(&site) {
                *acc.entry(format!("{site} ({})", w.message)).or_default() += 1;
            }
            acc
        });
    let witness_per_step = only_witness
        .values()
        .sum::<usize>()
        .div_ceil(MEASURED_STEPS as usize);
    let max_per_step = per_step.iter().copied().max().unwrap_or(0) + witness_per_step;

    // The snapshot as it stands now, and the reviewed one, if any.
    // The budget is the case's setting, not a read: raising it changes no snapshot.
    let mut snapshot = format!("host syncs per step: {max_per_step}\n");
    if seen.is_empty() {
        snapshot.push_str("no host syncs\n");
    }
    for (key, s) in &seen {
        snapshot.push_str(&key.snapshot_line(s.per_step.iter().max().copied().unwrap_or(0)));
        snapshot.push('\n');
    }
    let reviewed = state
        .snapshot_dir()
        .and_then(|dir| reviewed_snapshot(dir, case.name()));
    let is_new = |key: &ReadKey, s: &Seen| {
        reviewed.as_ref().is_some_and(|lines| {
            !lines.contains(&key.snapshot_line(s.per_step.iter().max().copied().unwrap_or(0)))
        })
    };

    // New reads (not in the reviewed snapshot) first, then in the order of the
    // source, so that "first at" is the read a change added, else the first in the step.
    let mut ordered: Vec<(&ReadKey, &Seen)> = seen.iter().collect();
    ordered.sort_by_key(|(key, s)| (!is_new(key, s), s.lines.first().cloned(), (*key).clone()));
    let describe = |key: &ReadKey, s: &Seen| {
        let lines: Vec<String> = s.lines.iter().map(ToString::to_string).collect();
        let backward = if s.in_backward { " in backward" } else { "" };
        format!(
            "{} {} ({}) ×{} per step{backward}{}",
            if lines.is_empty() {
                key.file.clone()
            } else {
                lines.join(", ")
            },
            key.what,
            key.kind.describe(),
            s.per_step.iter().max().copied().unwrap_or(0),
            key.intended
                .as_ref()
                .map_or(String::new(), |w| format!(", intended ({w})")),
        )
    };
    let site_lines: Vec<String> = ordered.iter().map(|(key, s)| describe(key, s)).collect();
    // The reviewed count of a read whose count changed: the snapshot has no
    // lines, so which of its lines is new the change cannot tell.
    let reviewed_count = |key: &ReadKey| {
        reviewed
            .iter()
            .flatten()
            .find_map(|line| key.count_in(line))
    };
    let new_reads: Vec<String> = ordered
        .iter()
        .filter(|(key, s)| is_new(key, s))
        .map(|(key, s)| match reviewed_count(key) {
            Some(before) => format!("{} (×{before} in the reviewed snapshot)", describe(key, s)),
            None => describe(key, s),
        })
        .collect();
    let witness_lines: Vec<String> = only_witness
        .iter()
        .map(|(site, n)| format!("{site} ×{} per step", n.div_ceil(MEASURED_STEPS as usize)))
        .collect();
    let metrics = ReadbacksMetrics {
        readbacks_per_step: per_step,
        budget: case.readback_budget,
        sites: site_lines.clone(),
        new_since_review: new_reads.clone(),
        observed_by: if device.is_accelerator() {
            "op observer: the syncs this device ran"
        } else {
            "op observer: on the CPU, the reads that sync on an accelerator"
        }
        .to_owned(),
        sync_debug: if sync_debug {
            "cuda sync-debug mode (warn), a second witness"
        } else {
            "not available on this device"
        }
        .to_owned(),
        only_sync_debug: witness_lines.clone(),
    };

    // Every failure of the run at once: over budget and a snapshot to review
    // are two things to fix, and the snapshot is written either way.
    let mut failures = Vec::new();
    if max_per_step > case.readback_budget {
        let first = new_reads
            .first()
            .or(site_lines.first())
            .or(witness_lines.first())
            .cloned()
            .unwrap_or_default();
        let mut message = format!(
            "{} per step, budget {}: {} at {first}",
            syncs_text(max_per_step),
            case.readback_budget,
            if new_reads.is_empty() { "first" } else { "new" },
        );
        if !device.is_accelerator() {
            message.push_str(" (on the CPU: where an accelerator will wait)");
        }
        message.push_str(
            "; move the read out of the step, read every N steps, or raise `Case::readback_budget`",
        );
        failures.push(message);
    }
    if !witness_lines.is_empty() {
        failures.push(format!(
            "CUDA sync-debug mode saw {} sync(s) the op observer did not, first at {}",
            witness_lines.len(),
            witness_lines[0]
        ));
    }
    if let Some(dir) = state.snapshot_dir() {
        let change = SnapshotChange {
            new_reads: &new_reads,
            gone: reviewed
                .iter()
                .flatten()
                .filter(|line| !snapshot.lines().any(|l| l == *line))
                .filter(|line| !line.starts_with("host syncs per step:"))
                // A read still seen whose count changed is named above, as new.
                .filter(|line| !seen.keys().any(|key| key.count_in(line).is_some()))
                .cloned()
                .collect(),
        };
        if let Err(message) = assert_snapshot(dir, case.name(), snapshot.trim_end(), &change) {
            failures.push(message);
        }
    }
    if let Some((first, rest)) = failures.split_first() {
        let mut message = first.clone();
        for more in rest {
            message.push_str("; and ");
            message.push_str(more);
        }
        return Ok(Verdict::fail(message, metrics));
    }
    Ok(Verdict::pass(
        format!(
            "{} per step (budget {})",
            syncs_text(max_per_step),
            case.readback_budget
        ),
        metrics,
    ))
}

/// The lines of the reviewed snapshot `readbacks__<case>.snap` in `dir`, if any.
fn reviewed_snapshot(dir: &Path, case: &str) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(dir.join(format!("readbacks__{case}.snap"))).ok()?;
    Some(
        devcheck_report::snapshots::body(&text)
            .lines()
            .map(str::to_owned)
            .collect(),
    )
}

/// What changed against the reviewed snapshot, for the failure's message.
struct SnapshotChange<'a> {
    /// Reads the reviewed snapshot does not have, with their lines.
    new_reads: &'a [String],
    /// Reviewed lines no read matches now.
    gone: Vec<String>,
}

/// `1 host sync`, `3 host syncs`.
fn syncs_text(count: usize) -> String {
    format!("{count} host sync{}", if count == 1 { "" } else { "s" })
}

/// Compares the sites with the reviewed snapshot `readbacks__<case>.snap` in
/// `dir`. A difference leaves the new snapshot beside it (`.snap.new`) for
/// review; a match removes a stale one.
fn assert_snapshot(
    dir: &Path,
    case: &str,
    content: &str,
    change: &SnapshotChange<'_>,
) -> Result<(), String> {
    let name = format!("readbacks__{case}");
    let reviewed = dir.join(format!("{name}.snap"));
    let reviewed_name = sites::repository_relative(&reviewed.to_string_lossy());
    let first_run = !reviewed.exists();
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    let result =
        crate::cause::quietly(|| settings.bind(|| insta::assert_snapshot!(name.as_str(), content)));
    if result.is_ok() {
        if let Err(error) = devcheck_report::snapshots::clear_pending(&reviewed) {
            eprintln!("warning: cannot remove the stale pending snapshot of {case}: {error}");
        }
        return Ok(());
    }
    // A difference: the message says what changed and how to review it.
    let accept = if dir.join(format!("{name}.snap.new")).exists() {
        format!(
            "review it with `cargo devcheck review` (or `cargo insta review` where cargo-insta is \
             installed, or rerun with INSTA_UPDATE=always); the reviewed file is {reviewed_name}"
        )
    } else {
        // insta writes no pending file where it detects CI (INSTA_UPDATE=auto):
        // a review there has nothing to show.
        format!(
            "no pending snapshot was written (insta writes none in CI unless INSTA_UPDATE=new): \
             run `cargo devcheck matrix` locally and review it with `cargo devcheck review`, then \
             commit {reviewed_name}"
        )
    };
    if first_run {
        eprintln!("devcheck: {case}: the first readbacks snapshot would record:\n{content}");
        return Err(format!(
            "no reviewed snapshot of this case's host syncs yet (it would record: {}); {accept}",
            content.lines().collect::<Vec<_>>().join("; ")
        ));
    }
    let mut what = Vec::new();
    if !change.new_reads.is_empty() {
        what.push(format!("new: {}", change.new_reads.join(", ")));
    }
    if !change.gone.is_empty() {
        what.push(format!("no longer seen: {}", change.gone.join(", ")));
    }
    if what.is_empty() {
        what.push(format!(
            "now: {}",
            content.lines().collect::<Vec<_>>().join("; ")
        ));
    }
    Err(format!(
        "host syncs differ from the reviewed snapshot ({}); {accept}",
        what.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_debug_callers_match_observer_lines() {
        assert_eq!(normalize_caller("./src/train.rs:12:9"), "src/train.rs:12");
        assert_eq!(normalize_caller("no location"), "no location");
    }

    #[test]
    fn snapshot_lines_leave_out_line_and_column() {
        let key = ReadKey {
            file: "src/train.rs".into(),
            function: "Net::step".into(),
            what: "f64::try_from".into(),
            kind: SyncKind::ScalarRead,
            intended: None,
        };
        assert_eq!(
            key.snapshot_line(2),
            "src/train.rs · Net::step · f64::try_from (scalar read) ×2"
        );
        // A changed count is the same read's.
        assert_eq!(key.count_in(&key.snapshot_line(1)), Some(1));
        let intended = ReadKey {
            intended: Some("readbacks::scalar_f64".into()),
            ..key.clone()
        };
        assert_eq!(intended.count_in(&key.snapshot_line(1)), None);
        assert_eq!(key.count_in(&intended.snapshot_line(1)), None);
    }
}
