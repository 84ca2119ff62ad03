//! One trial: its check run on a thread of its own under the case's time
//! limit, whatever the case does turned into a record, and the libtest-mimic
//! trial that hands the record to the sink.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Trial};
use serde_json::json;

use crate::case::{kind_name, Case};
use crate::checks::state::CaseState;
use crate::checks::Check;
use crate::device::{DeviceSlot, DeviceSpec};
use crate::error::TrialError;
use devcheck_report::report::{Outcome, Trial as TrialRecord};

use super::sink::Sink;

/// The record of one trial of `case`.
fn record(
    case: &Case,
    check: Check,
    device: DeviceSpec,
    outcome: Outcome,
    message: String,
    metrics: serde_json::Value,
    duration_ms: f64,
) -> TrialRecord {
    TrialRecord {
        name: trial_name(case, check, device),
        case: case.name().to_owned(),
        check: check.name().to_owned(),
        device: device.to_string(),
        outcome,
        message,
        metrics,
        caveat: None,
        machine: None,
        dtype: Some(kind_name(case.kind()).to_owned()),
        duration_ms: Some(duration_ms),
        rest: serde_json::Map::new(),
    }
}

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// Runs one trial on a thread of its own under the case's time limit. A trial
/// still running at the limit is failed as hung and its thread abandoned (Rust
/// cannot stop a thread); the case's later trials are failed at once, since
/// that thread may still hold the case's shared state.
fn execute_with_limit(state: &Arc<CaseState>, check: Check, device: DeviceSpec) -> TrialRecord {
    let started = Instant::now();
    let case = state.case();
    let failed = |message: String| {
        record(
            case,
            check,
            device,
            Outcome::Failed,
            message,
            json!({}),
            elapsed_ms(started),
        )
    };
    if let Some(hung) = state.hung() {
        return failed(format!(
            "not run: `{hung}` of this case hung, and its thread may still hold the case"
        ));
    }
    if let Some(sentence) = state.scaling_failure() {
        return failed(format!("not run: {sentence}"));
    }
    let (sender, receiver) = mpsc::channel();
    let worker = {
        let state = Arc::clone(state);
        std::thread::Builder::new()
            .name(trial_name(state.case(), check, device))
            // As much stack as a main thread: autograd of deep models recurses.
            .stack_size(8 << 20)
            .spawn(move || {
                let _ = sender.send(execute(&state, check, device));
            })
    };
    if let Err(error) = worker {
        return failed(format!("could not start the trial's thread: {error}"));
    }
    match receiver.recv_timeout(state.time_limit()) {
        Ok(record) => record,
        Err(RecvTimeoutError::Timeout) => {
            state.mark_hung(trial_name(case, check, device));
            failed(format!(
                "timed out: still running after {}, the time limit (a hang?); \
                 raise it with `--trial-timeout` or `Case::time_limit`",
                seconds(state.time_limit())
            ))
        }
        Err(RecvTimeoutError::Disconnected) => {
            failed("the trial's thread ended without a verdict".to_owned())
        }
    }
}

/// Steps tried when looking for the line of a step's returned error: as many
/// as any check runs before its first verdict.
const FAILING_STEPS: u64 = 4;

/// Runs one trial to a record; never panics, whatever the case does.
fn execute(state: &CaseState, check: Check, device: DeviceSpec) -> TrialRecord {
    let case = state.case();
    let started = Instant::now();
    let result = crate::cause::quietly(|| crate::checks::run(check, state, device));
    // A step that breaks only at a batch multiplier says so, once for the case.
    let scaled = |cause: String| state.diagnose_scaling(device, &cause).unwrap_or(cause);
    let mut caveat = None;
    let (outcome, message, metrics) = match result {
        Ok(Ok(verdict)) => {
            caveat = verdict.caveat;
            (
                if verdict.passed {
                    Outcome::Passed
                } else {
                    Outcome::Failed
                },
                verdict.message,
                verdict.metrics,
            )
        }
        Ok(Err(error @ TrialError::Torch(_))) => {
            // A libtorch error the step returned has no line: find it again.
            let weights = state.weights().ok();
            let at = weights.and_then(|w| {
                crate::trainer::failing_line(case, device, case.kind(), &w, FAILING_STEPS)
            });
            let cause = match at {
                Some(site) => format!("at {site}: {error}"),
                None => error.to_string(),
            };
            (Outcome::Failed, scaled(cause), json!({}))
        }
        Ok(Err(error)) => (Outcome::Failed, scaled(error.to_string()), json!({})),
        Err(panic) => (Outcome::Failed, scaled(panic.into_cause()), json!({})),
    };
    TrialRecord {
        caveat,
        ..record(
            case,
            check,
            device,
            outcome,
            message,
            metrics,
            elapsed_ms(started),
        )
    }
}

/// `<case>::<check>::<device>`, as libtest filters and the report name a trial.
pub(super) fn trial_name(case: &Case, check: Check, device: DeviceSpec) -> String {
    format!("{}::{}::{device}", case.name(), check.name())
}

/// The libtest-mimic trial of `check` on `slot`: an ignored one, recorded at once,
/// for a device that cannot run here.
pub(super) fn make_trial(
    state: &Arc<CaseState>,
    check: Check,
    slot: &DeviceSlot,
    sink: &Arc<Sink>,
    arguments: &Arguments,
) -> Trial {
    let name = trial_name(state.case(), check, slot.device);
    if let Some(reason) = slot.unavailable.clone() {
        let trial = Trial::ignorable_test(name.clone(), {
            let reason = reason.clone();
            move || Ok(Completion::ignored_with(reason))
        })
        .with_ignored_flag(true);
        if !arguments.is_filtered_out(&trial) && !arguments.list {
            sink.record(record(
                state.case(),
                check,
                slot.device,
                Outcome::Ignored,
                reason,
                json!({}),
                0.0,
            ));
        }
        return trial;
    }
    let (state, sink, device) = (Arc::clone(state), Arc::clone(sink), slot.device);
    Trial::test(name.clone(), move || {
        sink.start(&name);
        let ended = execute_with_limit(&state, check, device);
        let failure = (ended.outcome == Outcome::Failed).then(|| ended.message.clone());
        sink.record(ended);
        match failure {
            Some(message) => Err(message.into()),
            None => Ok(()),
        }
    })
}
