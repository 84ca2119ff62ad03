//! What watching costs: the built-in steps timed with and without the op
//! observer, interleaved in blocks so that drift on a noisy machine hits both.
//! Every step is synchronized, so an accelerator's time is the step's whole time.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{observe, Expectation};
use crate::case::{kind_name, Case};
use crate::checks::timing::{spread, Spread};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::trainer::{initial_weights, Trainer};

/// One case on one device, with and without the observer.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// The case.
    pub case: String,
    /// The device.
    pub device: String,
    /// The case's dtype.
    pub dtype: String,
    /// Ops the observer recorded per step.
    pub ops_per_step: usize,
    /// Native stacks it captured per step (the ops that may matter).
    pub stacks_per_step: usize,
    /// Step time without the observer.
    pub plain: Spread,
    /// Step time with the observer installed, recording and handing over its trace.
    pub observed: Spread,
    /// observed / plain, medians.
    pub ratio: f64,
    /// Steps measured each way.
    pub steps: usize,
}

/// Steps per block; blocks alternate between plain and observed.
const BLOCK: usize = 5;

/// Times `case` on `device` for about `budget`, half of it observed.
pub fn measure(case: &Case, device: DeviceSpec, budget: Duration) -> Result<Cost, TrialError> {
    let weights = initial_weights(case)?;
    let mut trainer = Trainer::new(case, device, case.kind(), &weights)?;
    let batch = trainer.batch(0)?;
    let expect = Expectation {
        device,
        kind: case.kind(),
    };
    for _ in 0..3 {
        trainer.step(&batch)?;
        observe(expect, || trainer.step(&batch))?.0?;
    }
    let (mut plain, mut observed) = (Vec::new(), Vec::new());
    let (mut ops_per_step, mut stacks_per_step) = (0, 0);
    let started = Instant::now();
    while started.elapsed() < budget || plain.len() < 3 * BLOCK {
        for _ in 0..BLOCK {
            device.synchronize()?;
            let t0 = Instant::now();
            trainer.step(&batch)?;
            device.synchronize()?;
            plain.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        for _ in 0..BLOCK {
            device.synchronize()?;
            let t0 = Instant::now();
            let (result, trace) = observe(expect, || trainer.step(&batch))?;
            device.synchronize()?;
            observed.push(t0.elapsed().as_secs_f64() * 1e3);
            result?;
            ops_per_step = trace.records.len();
            stacks_per_step = trace
                .records
                .iter()
                .filter(|r| !r.frames.is_empty())
                .count();
        }
    }
    let (plain_s, observed_s) = (spread(&plain), spread(&observed));
    Ok(Cost {
        case: case.name().to_owned(),
        device: device.to_string(),
        dtype: kind_name(case.kind()).to_owned(),
        ops_per_step,
        stacks_per_step,
        plain: plain_s,
        observed: observed_s,
        ratio: observed_s.median_ms / plain_s.median_ms,
        steps: plain.len(),
    })
}

/// The table the benchmark prints.
pub fn table(costs: &[Cost]) -> String {
    let mut out = format!(
        "{:<14} {:<7} {:>6} {:>7} {:>12} {:>14} {:>7} {:>6}\n",
        "case", "device", "ops", "stacks", "plain (ms)", "observed (ms)", "ratio", "steps"
    );
    for c in costs {
        out.push_str(&format!(
            "{:<14} {:<7} {:>6} {:>7} {:>12.3} {:>14.3} {:>7.3} {:>6}\n",
            c.case,
            c.device,
            c.ops_per_step,
            c.stacks_per_step,
            c.plain.median_ms,
            c.observed.median_ms,
            c.ratio,
            c.steps
        ));
    }
    out
}
