//! Each check's figures in a trial's `metrics`: one struct per check, which the
//! harness fills in and the summary (or anything else) reads back with
//! [`Trial::metrics_of`](crate::report::Trial::metrics_of), so that writer and
//! reader agree on every field's name and type.
//!
//! A report keeps `metrics` as JSON, so that a merge passes on a newer
//! devcheck's figures untouched. Reading is lenient: a field a report lacks
//! takes its default (only the field a reader needs to tell "not measured"
//! apart is required), and a figure that was not finite, written as JSON's
//! `null`, reads back as NaN.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::assert_close::Comparison;
use crate::report::Check;

/// The figures of one check.
pub trait CheckMetrics: Serialize + DeserializeOwned {
    /// The check whose trials carry these figures.
    const CHECK: Check;

    /// The figures as a trial's `metrics`.
    fn to_value(&self) -> Value {
        // Only maps with non-string keys fail to serialize, and no metrics have one.
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Placement: where the step's tensors and ops were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlacementMetrics {
    /// Tensors after the step (inputs, outputs, parameters, gradients, state) checked.
    pub tensors_checked: usize,
    /// Ops the observer recorded during the step.
    pub ops_observed: usize,
    /// Threads those ops ran on (autograd's device threads included).
    pub threads_observed: usize,
    /// The first input's leading dimension.
    pub batch_size: Option<i64>,
    /// Shapes of the inputs and outputs, by name.
    pub shapes: BTreeMap<String, Vec<i64>>,
    /// Tensors found on the wrong device or in the wrong dtype, one line each.
    pub offenders: Vec<String>,
    /// Misplaced ops the observer saw, at the user's line.
    pub observed: Vec<String>,
    /// The batch's moves to the device during the step, at the user's line.
    pub batch_uploads: Vec<String>,
}

impl CheckMetrics for PlacementMetrics {
    const CHECK: Check = Check::Placement;
}

/// Tolerance: the step's tensors against a reference, step by step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToleranceMetrics {
    /// How a tensor was judged, in words.
    pub criterion: String,
    /// What the tensors were compared with (`cpu float64`).
    pub reference: String,
    /// The baseline whose error bounds the candidate's (`cpu float32`).
    pub baseline: String,
    /// What was judged (`cuda:0 float32`).
    pub candidate: String,
    /// Training steps compared.
    pub steps: usize,
    /// Each tensor's verdict at the last step (none where an older devcheck
    /// wrote another layout).
    #[serde(deserialize_with = "or_default")]
    pub tensors: Vec<TensorDrift>,
    /// The largest candidate/baseline error ratio.
    pub worst_ratio: Option<f64>,
    /// The greatest difference to the reference at the last step.
    pub worst_abs_diff: Option<f64>,
    /// The greatest difference to the reference after each step.
    #[serde(with = "null_as_nan::vec")]
    pub drift_per_step: Vec<f64>,
    /// Reference tensors the step cast below the reference dtype itself.
    pub reference_downcast: Vec<String>,
    /// Reduced float32 precision (TF32) that was on, in words.
    pub reduced_precision: Option<String>,
    /// Why the case's tolerance was overridden, if it was.
    pub override_reason: Option<String>,
    /// The trajectory dump written (`--dump`).
    pub dump: Option<PathBuf>,
}

impl CheckMetrics for ToleranceMetrics {
    const CHECK: Check = Check::Tolerance;
}

/// One tensor's verdict in the tolerance check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorDrift {
    /// The tensor (`loss`, `param.fc.weight`).
    pub name: String,
    /// RMSE of the candidate against the reference.
    #[serde(with = "null_as_nan")]
    pub candidate_rmse: f64,
    /// RMSE of the baseline against the reference.
    #[serde(with = "null_as_nan")]
    pub baseline_rmse: f64,
    /// `candidate_rmse / baseline_rmse`.
    #[serde(with = "null_as_nan")]
    pub ratio: f64,
    /// The candidate's error may be this many times the baseline's …
    pub multiplier: f64,
    /// … plus this much.
    pub floor: f64,
    /// Non-finite elements in the candidate.
    pub not_finite: i64,
    /// Non-finite elements in the reference.
    pub reference_not_finite: i64,
    /// Whether the tensor is within its bound.
    pub passed: bool,
    /// Whether only the case's tolerance override let it pass.
    pub override_admitted: bool,
    /// Whether only TF32 being on let it pass.
    pub tf32_admitted: bool,
    /// `assert_close` against the reference.
    pub vs_reference: Comparison,
    /// `assert_close` against the CPU in the same dtype, on an accelerator.
    pub vs_cpu_same_dtype: Option<Comparison>,
}

/// Readbacks: host syncs per step, and where.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReadbacksMetrics {
    /// Host syncs the observer saw in each measured step.
    pub readbacks_per_step: Vec<usize>,
    /// Syncs per step the case allows.
    pub budget: usize,
    /// Each read's line, what it is and how often per step.
    pub sites: Vec<String>,
    /// Reads not in the reviewed snapshot.
    pub new_since_review: Vec<String>,
    /// What saw the syncs, in words.
    pub observed_by: String,
    /// Whether CUDA's sync-debug mode watched as a second witness, in words.
    pub sync_debug: String,
    /// Syncs only the sync-debug mode saw.
    pub only_sync_debug: Vec<String>,
}

impl CheckMetrics for ReadbacksMetrics {
    const CHECK: Check = Check::Readbacks;
}

/// Median and interquartile range of a sample, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spread {
    /// The median.
    #[serde(with = "null_as_nan")]
    pub median_ms: f64,
    /// Third minus first quartile.
    #[serde(with = "null_as_nan")]
    pub iqr_ms: f64,
}

/// Timing: naive, honest and device-event step times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingMetrics {
    /// Steps measured.
    #[serde(default)]
    pub steps_measured: usize,
    /// Steps run before measuring, a discarded unstable round included.
    #[serde(default)]
    pub warmup_steps: usize,
    /// What a timer around the call shows when nobody synchronizes.
    #[serde(default)]
    pub naive: Spread,
    /// The step with the device synchronized before and after: always there
    /// when the step was measured.
    pub honest: Spread,
    /// Device events' time, where the device has events.
    #[serde(default)]
    pub device_events: Option<Spread>,
    /// Honest over naive median.
    #[serde(default, with = "null_as_nan")]
    pub honest_over_naive: f64,
    /// Honest over device-event median.
    #[serde(default)]
    pub honest_over_device_events: Option<f64>,
    /// The first input's leading dimension.
    #[serde(default)]
    pub batch_size: Option<i64>,
    /// Why an accelerator has no device-event figure on this libtorch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_events_unavailable: Option<String>,
}

impl CheckMetrics for TimingMetrics {
    const CHECK: Check = Check::Timing;
}

/// Fallback: operators that ran on the CPU in place of the device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FallbackMetrics {
    /// Every operator that fell back, observed or warned about.
    pub fell_back: Vec<String>,
    /// The user's lines of each observed fallback.
    pub sites: BTreeMap<String, Vec<String>>,
    /// Operators the case accepts falling back.
    pub accepted: Vec<String>,
    /// Fallbacks libtorch warned about that the observer did not see.
    pub only_warned: Vec<String>,
    /// Fallbacks the observer saw without a warning.
    pub only_observed: Vec<String>,
    /// libtorch's warnings during the step.
    pub warnings: Vec<String>,
    /// `PYTORCH_ENABLE_MPS_FALLBACK`, if set.
    pub fallback_enabled: Option<String>,
}

impl CheckMetrics for FallbackMetrics {
    const CHECK: Check = Check::Fallback;
}

/// Memory: live and peak memory over epochs, in bytes above the baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryMetrics {
    /// How memory was measured, in words.
    pub measured_by: String,
    /// Device memory before the case was built (0 on the CPU).
    pub baseline_bytes: u64,
    /// Memory after every step.
    pub per_step: Vec<StepMemory>,
    /// Memory at every epoch's end, caches emptied.
    pub per_epoch: Vec<EpochMemory>,
    /// The highest peak of any step.
    pub peak_bytes: u64,
    /// Live memory's growth from the first epoch to the last, as a fraction.
    pub growth: f64,
    /// The growth the case allows.
    pub max_growth: f64,
}

impl CheckMetrics for MemoryMetrics {
    const CHECK: Check = Check::Memory;
}

/// Memory after one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepMemory {
    /// Live bytes after the step.
    pub current: u64,
    /// The most bytes live during the step.
    pub peak: u64,
}

/// Memory at one epoch's end, caches emptied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpochMemory {
    /// Live bytes.
    pub live: u64,
    /// The process's resident set, where the OS says.
    pub rss: Option<u64>,
}

/// A field read leniently: one in another layout (an older devcheck's) reads
/// as its default, so that the figures beside it still read.
fn or_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).unwrap_or_default())
}

/// Serde for an `f64` that JSON writes as `null` when it is not finite: read
/// back as NaN (`#[serde(with = "null_as_nan")]`, and `null_as_nan::vec`).
mod null_as_nan {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        value.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }

    pub mod vec {
        use serde::{Deserialize, Deserializer, Serialize, Serializer};

        pub fn serialize<S: Serializer>(values: &[f64], serializer: S) -> Result<S::Ok, S::Error> {
            values.serialize(serializer)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<f64>, D::Error> {
            let values = Vec::<Option<f64>>::deserialize(deserializer)?;
            Ok(values
                .into_iter()
                .map(|value| value.unwrap_or(f64::NAN))
                .collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Outcome, Trial};
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn figures_that_were_not_finite_read_back_as_nan() {
        let metrics = ToleranceMetrics {
            drift_per_step: vec![1e-7, f64::NAN],
            ..ToleranceMetrics::default()
        };
        let value = metrics.to_value();
        assert_eq!(value["drift_per_step"], json!([1e-7, null]));
        let back: ToleranceMetrics = serde_json::from_value(value).unwrap();
        assert_eq!(back.drift_per_step[0], 1e-7);
        assert!(back.drift_per_step[1].is_nan());
    }

    #[test]
    fn timing_without_an_honest_time_was_not_measured() {
        assert!(serde_json::from_value::<TimingMetrics>(json!({})).is_err());
        let partial: TimingMetrics =
            serde_json::from_value(json!({"honest": {"median_ms": 12.5}})).unwrap();
        assert_eq!(partial.honest.median_ms, 12.5);
        assert_eq!(partial.device_events, None);
    }

    /// Every passed trial of the reports in `tests/fixtures/reports` (written
    /// by earlier devchecks, or made from them) has figures its check reads.
    #[test]
    fn earlier_reports_figures_read_back() {
        fn reads<M: CheckMetrics>(trial: &Trial) -> bool {
            trial.check != M::CHECK.name() || trial.metrics_of::<M>().is_some()
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/reports");
        for name in ["vm-cpu.json", "h100-cuda.json", "mac-mps.json"] {
            let report = crate::report::load(&fixtures.join(name)).unwrap();
            let passed = report
                .trials
                .iter()
                .filter(|t| t.outcome == Outcome::Passed);
            for trial in passed {
                let read = reads::<PlacementMetrics>(trial)
                    && reads::<ToleranceMetrics>(trial)
                    && reads::<ReadbacksMetrics>(trial)
                    && reads::<TimingMetrics>(trial)
                    && reads::<FallbackMetrics>(trial)
                    && reads::<MemoryMetrics>(trial);
                assert!(read, "{name}: {}: {}", trial.name, trial.metrics);
            }
        }
    }

    #[test]
    fn an_absent_unavailability_is_not_written() {
        let timing = TimingMetrics {
            steps_measured: 7,
            warmup_steps: 2,
            naive: Spread::default(),
            honest: Spread::default(),
            device_events: None,
            honest_over_naive: 1.0,
            honest_over_device_events: None,
            batch_size: Some(8),
            device_events_unavailable: None,
        };
        let value = timing.to_value();
        assert!(value.get("device_events_unavailable").is_none());
        assert_eq!(value["device_events"], Value::Null);
    }
}

/// The memory layouts the layout check gives a tensor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layout {
    /// NHWC strides for a 4-D tensor.
    ChannelsLast,
    /// The last two dimensions' strides swapped (a transposed copy, transposed back).
    Transposed,
    /// Every other element of a buffer twice the size.
    StridedSlice,
    /// Left as it was: the case keeps it, or no other layout exists (one element per row).
    #[default]
    Unchanged,
}

impl Layout {
    /// The words used in messages.
    pub fn describe(self) -> &'static str {
        match self {
            Layout::ChannelsLast => "channels-last",
            Layout::Transposed => "transposed strides",
            Layout::StridedSlice => "a strided slice of a larger buffer",
            Layout::Unchanged => "unchanged",
        }
    }
}

/// One tensor of the layout check's last step, judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LayoutTensor {
    /// `param.fc.weight`, `loss`, …
    pub name: String,
    /// The contiguous run's RMSE against the reference.
    pub contiguous_rmse: f64,
    /// The relaid run's RMSE against the reference.
    pub relaid_rmse: f64,
    /// The second over the first.
    pub ratio: f64,
    /// The relaid run may be this many times the contiguous run's error …
    pub multiplier: f64,
    /// … plus this much.
    pub floor: f64,
    /// NaN or infinite values in the relaid run where the contiguous run has none.
    pub not_finite: i64,
    /// Beyond the bound, but within a tenth of the tensor's RMS where TF32 may
    /// have rounded the relaid run alone (CUDA).
    pub tf32_admitted: bool,
    /// Beyond the bound, but within assert_close's defaults for the dtype of
    /// the contiguous run (PyTorch's own standard for non-contiguous inputs):
    /// rounding, such as a sum taken in another order.
    pub rounding_admitted: bool,
    /// Within the bound.
    pub passed: bool,
}

/// Layout: the case's steps with its inputs in other memory layouts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LayoutMetrics {
    /// The layout each batch tensor had in the second run.
    pub batch: BTreeMap<String, Layout>,
    /// Batch tensors the case keeps as they are, with its reason.
    pub kept: BTreeMap<String, String>,
    /// 4-D parameters (convolution weights) run channels-last.
    pub channels_last_parameters: usize,
    /// Inputs the step refuses in another layout (a `view` that needs
    /// contiguous memory fails loudly, which is no silent wrong result): kept as
    /// they were, with the error.
    pub refused: BTreeMap<String, String>,
    /// What both runs were compared with.
    pub reference: String,
    /// Optimizer steps.
    pub steps: usize,
    /// Every compared tensor of the last step.
    pub tensors: Vec<LayoutTensor>,
}

impl CheckMetrics for LayoutMetrics {
    const CHECK: Check = Check::Layout;
}

/// The largest difference between two runs from the same state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Difference {
    /// The tensor.
    pub name: String,
    /// After this step (1-based).
    pub step: usize,
    /// Its largest absolute difference (NaN where one run has NaN and the other not).
    pub max_abs_diff: f64,
}

/// Repeatability: two runs from the same state, bit for bit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RepeatabilityMetrics {
    /// Whether every tensor of every step was bitwise the same.
    pub identical: bool,
    /// Tensors compared per step.
    pub tensors: usize,
    /// Optimizer steps.
    pub steps: usize,
    /// Tensors that differ after the last step.
    pub differing: Vec<String>,
    /// The largest difference, if any.
    pub largest: Option<Difference>,
    /// Ops seen that libtorch documents as nondeterministic on this device.
    pub nondeterministic_ops: Vec<String>,
    /// Whether the case requires bitwise repeatability (`Case::deterministic`).
    pub required: bool,
}

impl CheckMetrics for RepeatabilityMetrics {
    const CHECK: Check = Check::Repeatability;
}
