//! Sweeps: how far a case scales on a device. The batch sweep doubles the batch
//! (through [`Case::batch_multiplier`]) until the device runs out of memory or a
//! memory ceiling is reached, recording honest step time (synchronized) and
//! peak memory at each size; the epoch sweep records live and peak memory over
//! many epochs at one size. Both write a table, JSON and an SVG plot.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use plotters::prelude::*;
use serde::Serialize;
use serde_json::json;

use crate::case::kind_name;
use crate::case::{Case, Named};
use crate::checks::memory::{measure, measure_epochs, measured_by, mib, MeasuredEpochs};
use crate::checks::timing::{spread, Spread};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::shim::TensorMemory;
use crate::trainer::Trainer;

/// Limits of a batch sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepLimits {
    /// Stop before a batch whose peak memory would pass this (bytes).
    pub ceiling: Option<u64>,
    /// Largest batch multiplier tried.
    pub max_multiplier: i64,
    /// Time spent measuring each batch size (after one warm-up step).
    pub time_per_size: Duration,
}

/// One batch size measured.
#[derive(Debug, Clone, Serialize)]
pub struct BatchPoint {
    /// The case's batch repeated this many times.
    pub multiplier: i64,
    /// Samples per step.
    pub batch_size: i64,
    /// Honest (synchronized) step time.
    pub step: Spread,
    /// Steps measured.
    pub steps: usize,
    /// Samples per second at the median step time.
    pub samples_per_s: f64,
    /// Peak memory of model, optimizer and steps at this size, in bytes.
    pub peak_bytes: u64,
}

/// A whole batch sweep.
#[derive(Debug, Clone, Serialize)]
pub struct BatchSweep {
    /// The case.
    pub case: String,
    /// The device.
    pub device: String,
    /// The case's dtype.
    pub dtype: String,
    /// How memory was measured.
    pub measured_by: &'static str,
    /// The ceiling used, in bytes.
    pub ceiling_bytes: Option<u64>,
    /// Each size, smallest first.
    pub points: Vec<BatchPoint>,
    /// Why the sweep ended.
    pub stopped: String,
    /// It ended because the step failed at a size it should run (not out of
    /// memory, a ceiling or the largest multiplier): the sweep fails.
    pub step_failed: bool,
}

/// Whether a cause is the device (or host) running out of memory.
pub fn is_out_of_memory(cause: &str) -> bool {
    let cause = cause.to_ascii_lowercase();
    [
        "out of memory",
        "can't allocate memory",
        "not enough memory",
    ]
    .iter()
    .any(|m| cause.contains(m))
}

fn batch_size(trainer: &Trainer<'_>) -> Result<i64, TrialError> {
    let batch = trainer.batch(0)?;
    Ok(batch
        .tensors
        .first()
        .and_then(|(_, t)| t.size().first().copied())
        .unwrap_or(1))
}

/// Builds the case `multiplier` times larger and measures it.
fn measure_size(
    case: &Case,
    device: DeviceSpec,
    weights: &Named,
    multiplier: i64,
    budget: Duration,
) -> Result<BatchPoint, TrialError> {
    let case = case.clone().batch_multiplier(multiplier);
    device.synchronize()?;
    device.empty_cache()?;
    let baseline = device.memory()?.map_or(0, |stats| stats.allocated_current);
    device.reset_peak_memory()?;
    let tracker = TensorMemory::start()?;
    tracker.reset_peak();
    let mut trainer = Trainer::new(&case, device, case.kind(), weights)?;
    let size = batch_size(&trainer)?;
    let batch = trainer.batch(0)?;
    trainer.step(&batch)?;
    device.synchronize()?;
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 3 || (started.elapsed() < budget && times.len() < 100) {
        device.synchronize()?;
        let t0 = Instant::now();
        trainer.step(&batch)?;
        device.synchronize()?;
        times.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let (_, peak) = measure(device, &tracker, baseline)?;
    let step = spread(&times);
    Ok(BatchPoint {
        multiplier,
        batch_size: size,
        samples_per_s: size as f64 / (step.median_ms / 1e3),
        steps: times.len(),
        step,
        peak_bytes: peak,
    })
}

/// Doubles the batch from the case's own size until out of memory, the
/// ceiling, or the largest multiplier.
pub fn batch_sweep(
    case: &Case,
    device: DeviceSpec,
    limits: SweepLimits,
) -> Result<BatchSweep, TrialError> {
    crate::init()?;
    let weights = crate::trainer::initial_weights(case)?;
    // One throwaway step first, so that one-off allocations (library workspaces,
    // kernel caches) are not charged to the first size. Its failure, if any,
    // shows again, and is reported, at the first size.
    let _ = crate::cause::quietly(|| -> Result<(), TrialError> {
        let mut warm = Trainer::new(case, device, case.kind(), &weights)?;
        warm.run_step(0)?;
        Ok(())
    });
    let mut points: Vec<BatchPoint> = Vec::new();
    let mut multiplier = 1i64;
    let mut step_failed = false;
    let stopped = loop {
        if multiplier > limits.max_multiplier {
            break format!(
                "reached the largest batch multiplier, {}",
                limits.max_multiplier
            );
        }
        if let (Some(ceiling), Some(last)) = (limits.ceiling, points.last()) {
            if last.peak_bytes.saturating_mul(2) > ceiling {
                break format!(
                    "the next size would need about {}, above the ceiling of {}",
                    mib(last.peak_bytes.saturating_mul(2)),
                    mib(ceiling)
                );
            }
        }
        let measured = crate::cause::quietly(|| {
            measure_size(case, device, &weights, multiplier, limits.time_per_size)
        });
        let failure = match measured {
            Ok(Ok(point)) => {
                let over = limits.ceiling.filter(|c| point.peak_bytes > *c);
                points.push(point);
                if let Some(ceiling) = over {
                    break format!("peak memory passed the ceiling of {}", mib(ceiling));
                }
                multiplier *= 2;
                continue;
            }
            Ok(Err(error)) => error,
            Err(panic) => TrialError::from(panic),
        };
        let cause = failure.to_string();
        // Release what the failed size left in the caching allocator.
        let _ = device.synchronize();
        let _ = device.empty_cache();
        if is_out_of_memory(&cause) && !points.is_empty() {
            break format!("out of memory at batch multiplier {multiplier}: {cause}");
        }
        if !points.is_empty() {
            // It ran at the smaller sizes: the batch size is what it refuses.
            let scaled = case.clone().batch_multiplier(multiplier);
            let size = scaled
                .batch_size()
                .map_or_else(|| format!("×{multiplier}"), |n| n.to_string());
            // A panic names its line; a returned error is found again by the observer.
            let at = if cause.starts_with("panicked at ") {
                String::new()
            } else {
                crate::trainer::failing_line(&scaled, device, scaled.kind(), &weights, 1)
                    .map_or_else(String::new, |site| format!(" at {site}"))
            };
            step_failed = true;
            break format!("the step does not accept batch {size}{at}: {cause}");
        }
        return Err(failure);
    };
    Ok(BatchSweep {
        case: case.name().to_owned(),
        device: device.to_string(),
        dtype: kind_name(case.kind()).to_owned(),
        measured_by: measured_by(device),
        ceiling_bytes: limits.ceiling,
        points,
        stopped,
        step_failed,
    })
}

/// Live and peak memory at each epoch's end.
#[derive(Debug, Clone, Serialize)]
pub struct EpochSweep {
    /// The case.
    pub case: String,
    /// The device.
    pub device: String,
    /// How memory was measured.
    pub measured_by: &'static str,
    /// Steps per epoch.
    pub steps_per_epoch: usize,
    /// Live bytes at each epoch's end (caches emptied).
    pub live_bytes: Vec<u64>,
    /// Highest per-step peak within each epoch.
    pub peak_bytes: Vec<u64>,
    /// Growth of live memory from the first epoch to the last (0.1 = 10 %).
    pub growth: f64,
}

/// Runs `epochs` epochs of the case and records memory at each.
pub fn epoch_sweep(
    case: &Case,
    device: DeviceSpec,
    epochs: usize,
    steps_per_epoch: usize,
) -> Result<EpochSweep, TrialError> {
    crate::init()?;
    let weights = crate::trainer::initial_weights(case)?;
    let run = measure_epochs(case, device, &weights, epochs, steps_per_epoch)?;
    let peak: Vec<u64> = run
        .per_step
        .chunks(steps_per_epoch.max(1))
        .map(MeasuredEpochs::peak_bytes)
        .collect();
    Ok(EpochSweep {
        case: case.name().to_owned(),
        device: device.to_string(),
        measured_by: measured_by(device),
        steps_per_epoch,
        live_bytes: run.live_bytes(),
        peak_bytes: peak,
        growth: run.growth(),
    })
}

fn mib_f(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The batch sweep as a table.
pub fn batch_table(sweep: &BatchSweep) -> String {
    let mut out = format!(
        "{} on {} ({}), memory: {}\n{:>10}  {:>10}  {:>12}  {:>10}  {:>14}  {:>12}\n",
        sweep.case,
        sweep.device,
        sweep.dtype,
        sweep.measured_by,
        "multiplier",
        "batch",
        "step (ms)",
        "IQR (ms)",
        "samples/s",
        "peak (MiB)"
    );
    for p in &sweep.points {
        let _ = writeln!(
            out,
            "{:>10}  {:>10}  {:>12.3}  {:>10.3}  {:>14.1}  {:>12.2}",
            p.multiplier,
            p.batch_size,
            p.step.median_ms,
            p.step.iqr_ms,
            p.samples_per_s,
            mib_f(p.peak_bytes)
        );
    }
    let _ = writeln!(out, "stopped: {}", sweep.stopped);
    out
}

/// The epoch sweep as a table.
pub fn epoch_table(sweep: &EpochSweep) -> String {
    let mut out = format!(
        "{} on {}, {} steps per epoch, memory: {}\n{:>6}  {:>12}  {:>12}\n",
        sweep.case,
        sweep.device,
        sweep.steps_per_epoch,
        sweep.measured_by,
        "epoch",
        "live (MiB)",
        "peak (MiB)"
    );
    for (i, (live, peak)) in sweep.live_bytes.iter().zip(&sweep.peak_bytes).enumerate() {
        let _ = writeln!(
            out,
            "{:>6}  {:>12.3}  {:>12.3}",
            i + 1,
            mib_f(*live),
            mib_f(*peak)
        );
    }
    let _ = writeln!(
        out,
        "live memory grew {:+.1} % from the first epoch to the last",
        sweep.growth * 100.0
    );
    out
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

/// A plot plotters could not draw.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the plot: {0}")]
pub struct PlotError(String);

/// An axis label without needless decimals (`20000`, `2.5`, `0.12`).
fn number_label(value: &f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 || *value == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

fn axis_max(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.fold(0.0f64, f64::max);
    if max > 0.0 {
        max * 1.1
    } else {
        1.0
    }
}

/// Throughput and peak memory against batch size, side by side, as SVG.
pub fn batch_svg(sweep: &BatchSweep) -> Result<String, PlotError> {
    let mut svg = String::new();
    let mut draw = || -> PlotResult {
        let root = SVGBackend::with_string(&mut svg, (1000, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!("{} on {} ({})", sweep.case, sweep.device, sweep.dtype);
        let root = root.titled(&title, ("sans-serif", 22))?;
        let (left, right) = root.split_horizontally(500);
        let sizes: Vec<f64> = sweep.points.iter().map(|p| p.batch_size as f64).collect();
        let (low, high) = (
            sizes.first().copied().unwrap_or(1.0),
            sizes
                .last()
                .copied()
                .unwrap_or(2.0)
                .max(sizes.first().copied().unwrap_or(1.0) * 2.0),
        );
        let panels: [(&DrawingArea<SVGBackend, _>, &str, Vec<f64>); 2] = [
            (
                &left,
                "throughput (samples/s, synchronized)",
                sweep.points.iter().map(|p| p.samples_per_s).collect(),
            ),
            (
                &right,
                "peak memory (MiB)",
                sweep.points.iter().map(|p| mib_f(p.peak_bytes)).collect(),
            ),
        ];
        for (area, label, values) in panels {
            let mut chart = ChartBuilder::on(area)
                .margin(16)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .caption(label, ("sans-serif", 16))
                .build_cartesian_2d(
                    (low / 1.5..high * 1.5).log_scale(),
                    0.0..axis_max(values.iter().copied()),
                )?;
            chart
                .configure_mesh()
                .x_desc("batch size")
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&number_label)
                .draw()?;
            let series: Vec<(f64, f64)> = sizes.iter().copied().zip(values).collect();
            chart.draw_series(LineSeries::new(series.clone(), BLUE.stroke_width(2)))?;
            chart.draw_series(
                series
                    .into_iter()
                    .map(|(x, y)| Circle::new((x, y), 4, BLUE.filled())),
            )?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| PlotError(e.to_string()))?;
    Ok(svg)
}

/// Live and peak memory against epoch, as SVG.
pub fn epoch_svg(sweep: &EpochSweep) -> Result<String, PlotError> {
    let mut svg = String::new();
    let mut draw = || -> PlotResult {
        let root = SVGBackend::with_string(&mut svg, (800, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let epochs = sweep.live_bytes.len().max(1) as f64;
        let top = axis_max(
            sweep
                .peak_bytes
                .iter()
                .chain(&sweep.live_bytes)
                .map(|b| mib_f(*b)),
        );
        let mut chart = ChartBuilder::on(&root)
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .caption(
                format!("{} on {}: memory over epochs", sweep.case, sweep.device),
                ("sans-serif", 20),
            )
            .build_cartesian_2d(0.5..epochs + 0.5, 0.0..top)?;
        chart
            .configure_mesh()
            .x_desc("epoch")
            .y_desc("MiB")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&number_label)
            .draw()?;
        for (label, values, color) in [
            ("live at epoch end", &sweep.live_bytes, BLUE),
            ("peak within epoch", &sweep.peak_bytes, RED),
        ] {
            let points: Vec<(f64, f64)> = values
                .iter()
                .enumerate()
                .map(|(i, b)| (i as f64 + 1.0, mib_f(*b)))
                .collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| PlotError(e.to_string()))?;
    Ok(svg)
}

/// The batch sweep's JSON.
pub fn batch_json(sweep: &BatchSweep) -> serde_json::Value {
    json!({"kind": "batch", "sweep": sweep})
}

/// The epoch sweep's JSON.
pub fn epoch_json(sweep: &EpochSweep) -> serde_json::Value {
    json!({"kind": "epochs", "sweep": sweep})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Batch, Model, StepOutput};
    use tch::nn::{self, Module};
    use tch::{Kind, TchError, Tensor};

    /// A step that views its input with the batch size it was written for.
    struct KnowsItsBatch {
        fc: nn::Linear,
    }

    impl Model for KnowsItsBatch {
        fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
            let x = batch.get("x").f_view([8, 4])?;
            let out = self.fc.forward(&x);
            let loss = out.f_mean(None)?;
            Ok(StepOutput {
                outputs: vec![("out".into(), out)],
                loss,
            })
        }
    }

    fn knows_its_batch() -> Case {
        Case::new(
            "knows-its-batch",
            |vs| {
                Ok(Box::new(KnowsItsBatch {
                    fc: nn::linear(vs.root() / "fc", 4, 2, Default::default()),
                }) as Box<dyn Model>)
            },
            |_step| {
                Ok(Batch::new([(
                    "x",
                    Tensor::randn([8, 4], (Kind::Double, tch::Device::Cpu)),
                )]))
            },
        )
    }

    #[test]
    fn a_sweep_stops_at_the_first_batch_the_step_refuses_and_says_so() {
        let limits = SweepLimits {
            ceiling: None,
            max_multiplier: 8,
            time_per_size: Duration::from_millis(5),
        };
        let sweep = batch_sweep(&knows_its_batch(), DeviceSpec::Cpu, limits).unwrap();
        assert_eq!(sweep.points.len(), 1, "only its own batch runs");
        assert!(sweep.step_failed);
        // The returned error is found again at its line by the observer.
        let line = 1 + include_str!("sweep.rs")
            .lines()
            .position(|l| l.contains("batch.get(\"x\").f_view([8, 4])?"))
            .unwrap();
        assert!(
            sweep.stopped.starts_with(&format!(
                "the step does not accept batch 16 at harness/src/sweep.rs:{line}:"
            )),
            "{}",
            sweep.stopped
        );
        assert!(
            sweep
                .stopped
                .contains("(Tensor::view): libtorch error: shape '[8, 4]' is invalid"),
            "{}",
            sweep.stopped
        );
    }

    #[test]
    fn scaled_batches_are_made_for_the_size() {
        let case = knows_its_batch()
            .scaled_batches(|_step, multiplier| {
                Ok(Batch::new([(
                    "x",
                    Tensor::zeros([8 * multiplier, 4], (Kind::Double, tch::Device::Cpu)),
                )]))
            })
            .batch_multiplier(3);
        assert_eq!(case.batch_size(), Some(24));
    }

    #[test]
    fn out_of_memory_is_recognized_on_every_backend() {
        assert!(is_out_of_memory(
            "libtorch error: CUDA out of memory. Tried to allocate 2.00 GiB."
        ));
        assert!(is_out_of_memory(
            "libtorch error: MPS backend out of memory (MPS allocated: 17.2 GB)"
        ));
        assert!(is_out_of_memory(
            "libtorch error: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory"
        ));
        assert!(!is_out_of_memory(
            "libtorch error: shapes cannot be multiplied"
        ));
    }

    fn sweep() -> BatchSweep {
        let point = |multiplier: i64, ms: f64, peak: u64| BatchPoint {
            multiplier,
            batch_size: 32 * multiplier,
            step: Spread {
                median_ms: ms,
                iqr_ms: 0.1,
            },
            steps: 10,
            samples_per_s: 32.0 * multiplier as f64 / (ms / 1e3),
            peak_bytes: peak,
        };
        BatchSweep {
            case: "cnn".into(),
            device: "cpu".into(),
            dtype: "float32".into(),
            measured_by: "live tensor bytes (libtorch memory hook)",
            ceiling_bytes: Some(64 << 20),
            points: vec![point(1, 2.0, 10 << 20), point(2, 3.0, 20 << 20)],
            stopped: "the next size would need about 40.00 MiB, above the ceiling of 32.00 MiB"
                .into(),
            step_failed: false,
        }
    }

    #[test]
    fn the_table_has_one_row_per_size_and_says_why_it_stopped() {
        let table = batch_table(&sweep());
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 5, "{table}");
        assert_eq!(
            lines[2],
            "         1          32         2.000       0.100         16000.0         10.00"
        );
        assert!(lines[4].starts_with("stopped: the next size"));
    }

    #[test]
    fn the_plot_is_svg_with_both_panels() {
        let svg = batch_svg(&sweep()).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        assert!(svg.contains("throughput (samples/s, synchronized)"));
        assert!(svg.contains("peak memory (MiB)"));
        assert_eq!(svg.matches("<circle").count(), 4, "two points per panel");
    }
}
