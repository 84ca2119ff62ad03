//! Timing: per step, the naive host time (what a timer around the call shows
//! when nobody synchronizes) and the honest time (device synchronized before
//! and after), plus device-event time where the device has events. Repeats
//! adapt like torch.utils.benchmark's adaptive_autorange: measure until the
//! spread is small or the time budget is spent. Fails only when the
//! measurement itself is broken, never because a step is slow; a spread
//! larger than its median after a second round is flagged unstable (`?`).

use std::time::{Duration, Instant};

use devcheck_report::metrics::TimingMetrics;

use super::state::CaseState;
use super::Verdict;
use crate::case::Case;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::shim::DeviceEvent;
use crate::trainer::Trainer;

/// How long to measure and how many repeats to allow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimingBudget {
    /// Steps run before measuring (allocator, kernel selection, lazy init).
    pub warmup_steps: u64,
    /// Fewest measured steps.
    pub min_steps: usize,
    /// Most measured steps.
    pub max_steps: usize,
    /// Stop once this much time was spent measuring (after `min_steps`).
    pub max_time: Duration,
    /// Stop early once IQR / median of the honest times falls below this.
    pub stable_spread: f64,
}

impl Default for TimingBudget {
    fn default() -> Self {
        Self {
            warmup_steps: 2,
            min_steps: 7,
            max_steps: 200,
            max_time: Duration::from_millis(1500),
            stable_spread: 0.1,
        }
    }
}

pub use devcheck_report::metrics::Spread;

/// Median and IQR with linear interpolation between order statistics (numpy's default).
pub fn spread(samples: &[f64]) -> Spread {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let position = q * (sorted.len() - 1) as f64;
        let (low, high) = (position.floor() as usize, position.ceil() as usize);
        sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
    };
    Spread {
        median_ms: quantile(0.5),
        iqr_ms: quantile(0.75) - quantile(0.25),
    }
}

/// Measures naive, honest and device-event times of the case's step on `device`.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let budget = state.timing_budget();
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    let batch = trainer.batch(0)?;
    for _ in 0..budget.warmup_steps {
        trainer.step(&batch)?;
    }
    device.synchronize()?;
    let events = device.is_accelerator() && crate::version::DEVICE_EVENT_TIMING;
    let mut samples = measure(&mut trainer, &batch, device, events, &budget)?;
    // A spread larger than the median is no measurement of one step's time: a
    // busy machine, or first steps still warming up (kernel selection, caches).
    // The first round then counts as warm-up, and the figures are a second's.
    let mut discarded = 0;
    if unstable(&spread(&samples.honest)) {
        discarded = samples.honest.len();
        samples = measure(&mut trainer, &batch, device, events, &budget)?;
    }
    let Samples {
        naive,
        honest,
        device_ms,
    } = samples;
    let (naive_s, honest_s) = (spread(&naive), spread(&honest));
    let device_s = (!device_ms.is_empty()).then(|| spread(&device_ms));
    let ratio = honest_s.median_ms / naive_s.median_ms;
    let metrics = TimingMetrics {
        steps_measured: honest.len(),
        warmup_steps: budget.warmup_steps as usize + discarded,
        naive: naive_s,
        honest: honest_s,
        device_events: device_s,
        honest_over_naive: ratio,
        honest_over_device_events: device_s.map(|d| honest_s.median_ms / d.median_ms),
        batch_size: batch
            .tensors
            .first()
            .and_then(|(_, t)| t.size().first().copied()),
        device_events_unavailable: (device.is_accelerator() && !events)
            .then(|| crate::version::NO_DEVICE_EVENT_TIMING.to_owned()),
    };
    if let Some(problem) = broken(&naive, &honest, &device_ms) {
        return Ok(Verdict::fail(
            format!("timing measurement is broken: {problem}"),
            metrics,
        ));
    }
    let mut message = format!(
        "the host finished queueing in {:.3} ms, the step took {:.3} ms synchronized (×{ratio:.1}; IQR {:.3} ms, {} steps)",
        naive_s.median_ms,
        honest_s.median_ms,
        honest_s.iqr_ms,
        honest.len()
    );
    if let Some(d) = device_s {
        message.push_str(&format!(
            "; device events {:.3} ms (synchronized/events {:.3})",
            d.median_ms,
            honest_s.median_ms / d.median_ms
        ));
    }
    if unstable(&honest_s) {
        // Flagged, not failed: on a busy CI machine a sound step can measure like this.
        message.push_str(&format!(
            "; unstable: the IQR is above the median after {} warm-up steps (the machine was \
             busy, or the step's time varies from step to step): run the timing trials alone \
             (`--filter ::timing::`) or give them longer (`--timing-ms`) before trusting it",
            budget.warmup_steps as usize + discarded,
        ));
        return Ok(Verdict::pass(message, metrics).with_caveat(super::Caveat::Unstable));
    }
    Ok(Verdict::pass(message, metrics))
}

/// Whether a spread is too wide to be a step's time: its IQR above its median.
fn unstable(spread: &Spread) -> bool {
    spread.iqr_ms > spread.median_ms
}

/// The times of one round of measured steps, in milliseconds.
struct Samples {
    naive: Vec<f64>,
    honest: Vec<f64>,
    device_ms: Vec<f64>,
}

/// Measures steps until the spread is small or the budget is spent.
fn measure(
    trainer: &mut Trainer,
    batch: &crate::case::Batch,
    device: DeviceSpec,
    events: bool,
    budget: &TimingBudget,
) -> Result<Samples, TrialError> {
    let (mut naive, mut honest, mut device_ms) = (Vec::new(), Vec::new(), Vec::new());
    let started = Instant::now();
    while honest.len() < budget.max_steps {
        let mut start_event = if events {
            Some(DeviceEvent::new(device.backend(), device.index())?)
        } else {
            None
        };
        let mut end_event = if events {
            Some(DeviceEvent::new(device.backend(), device.index())?)
        } else {
            None
        };
        device.synchronize()?;
        let t0 = Instant::now();
        if let Some(e) = start_event.as_mut() {
            e.record()?;
        }
        trainer.step(batch)?;
        if let Some(e) = end_event.as_mut() {
            e.record()?;
        }
        let t1 = Instant::now();
        device.synchronize()?;
        let t2 = Instant::now();
        naive.push((t1 - t0).as_secs_f64() * 1e3);
        honest.push((t2 - t0).as_secs_f64() * 1e3);
        if let (Some(start), Some(end)) = (&start_event, &end_event) {
            device_ms.push(start.elapsed_ms(end)?);
        }
        if honest.len() >= budget.min_steps {
            let s = spread(&honest);
            if started.elapsed() >= budget.max_time
                || s.iqr_ms <= budget.stable_spread * s.median_ms
            {
                break;
            }
        }
    }
    Ok(Samples {
        naive,
        honest,
        device_ms,
    })
}

/// Why a set of measurements cannot be trusted, if it cannot.
fn broken(naive: &[f64], honest: &[f64], device_ms: &[f64]) -> Option<String> {
    if honest.len() < 3 {
        return Some(format!("only {} steps measured", honest.len()));
    }
    let all = naive.iter().chain(honest).chain(device_ms);
    if let Some(bad) = all.clone().find(|t| !t.is_finite() || **t < 0.0) {
        return Some(format!("a measured time is {bad}"));
    }
    if let Some(i) = (0..honest.len()).find(|&i| honest[i] < naive[i]) {
        return Some(format!(
            "step {i}: synchronized time below the unsynchronized one"
        ));
    }
    // Device time of a step cannot exceed the host's synchronized window around it.
    if let Some(i) = (0..device_ms.len()).find(|&i| device_ms[i] > honest[i] * 1.05 + 0.05) {
        return Some(format!(
            "step {i}: device events report {:.3} ms inside a {:.3} ms window",
            device_ms[i], honest[i]
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_interpolates_quartiles_like_numpy() {
        // numpy.percentile([1, 2, 3, 4, 10], [25, 50, 75]) == [2, 3, 4]
        let s = spread(&[10.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(s.median_ms, 3.0);
        assert_eq!(s.iqr_ms, 2.0);
        let even = spread(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(even.median_ms, 2.5);
        assert_eq!(even.iqr_ms, 1.5);
    }

    /// A step that takes 1 ms or 30 ms: no single step time.
    struct Erratic {
        fc: tch::nn::Linear,
        calls: u64,
    }

    impl crate::case::Model for Erratic {
        fn step(
            &mut self,
            batch: &crate::case::Batch,
        ) -> Result<crate::case::StepOutput, tch::TchError> {
            use tch::nn::Module;
            self.calls += 1;
            // Two steps in five take 30 ms: the median is 1 ms, the IQR about 29 ms.
            let pause = if self.calls % 5 < 2 { 30 } else { 1 };
            std::thread::sleep(Duration::from_millis(pause));
            let out = self.fc.forward(batch.get("x"));
            let loss = out.f_mean(None)?;
            Ok(crate::case::StepOutput {
                outputs: vec![("out".into(), out)],
                loss,
            })
        }
    }

    #[test]
    fn a_spread_wider_than_the_median_is_flagged_after_a_second_round() {
        assert!(unstable(&spread(&[1.0, 1.0, 1.0, 30.0, 30.0])));
        assert!(!unstable(&spread(&[4.0, 5.0, 5.0, 6.0])));
        let case = Case::new(
            "erratic",
            |vs| {
                Ok(Box::new(Erratic {
                    fc: tch::nn::linear(vs.root() / "fc", 4, 2, Default::default()),
                    calls: 0,
                }) as Box<dyn crate::case::Model>)
            },
            |_step| {
                Ok(crate::case::Batch::new([(
                    "x",
                    tch::Tensor::randn([8, 4], (tch::Kind::Double, tch::Device::Cpu)),
                )]))
            },
        );
        let budget = TimingBudget {
            max_time: Duration::from_millis(200),
            ..TimingBudget::default()
        };
        let state = CaseState::new(case.clone(), None, budget);
        let verdict = run(&case, DeviceSpec::Cpu, &state).unwrap();
        assert!(verdict.passed, "{}", verdict.message);
        assert_eq!(verdict.caveat, Some(super::super::Caveat::Unstable));
        assert!(
            verdict
                .message
                .contains("; unstable: the IQR is above the median after "),
            "{}",
            verdict.message
        );
        let warmup = verdict.metrics["warmup_steps"].as_u64().unwrap();
        let measured = verdict.metrics["steps_measured"].as_u64().unwrap();
        assert!(warmup > 2 && measured >= 7, "{}", verdict.metrics);
    }

    #[test]
    fn broken_measurements_are_named() {
        assert_eq!(
            broken(&[1.0], &[2.0], &[]).unwrap(),
            "only 1 steps measured"
        );
        let naive = [1.0, 1.0, 1.0];
        assert!(broken(&naive, &[2.0, f64::NAN, 2.0], &[])
            .unwrap()
            .contains("NaN"));
        assert!(broken(&naive, &[2.0, 0.5, 2.0], &[])
            .unwrap()
            .contains("step 1"));
        assert!(broken(&naive, &[2.0, 2.0, 2.0], &[1.9, 9.0, 1.9])
            .unwrap()
            .contains("device events"));
        assert_eq!(broken(&naive, &[2.0, 2.0, 2.0], &[1.9, 1.9, 1.9]), None);
    }
}
