//! What a case is: how to build a model on a device from a seed, make a batch,
//! and do one training step; plus its dtype, tolerances and budgets.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tch::nn::VarStore;
use tch::{Kind, TchError, Tensor};

use crate::compare::Tolerance;

/// Named tensors, in a stable order.
pub type Named = Vec<(String, Tensor)>;

/// One batch of named inputs (features, labels, masks).
pub struct Batch {
    /// The tensors, in the order the case made them.
    pub tensors: Named,
}

impl Batch {
    /// A batch from named tensors.
    pub fn new(tensors: impl IntoIterator<Item = (impl Into<String>, Tensor)>) -> Self {
        Self {
            tensors: tensors.into_iter().map(|(n, t)| (n.into(), t)).collect(),
        }
    }

    /// The tensor called `name`.
    ///
    /// # Panics
    /// If the batch has no such tensor: a bug in the case, reported as its failure.
    pub fn get(&self, name: &str) -> &Tensor {
        self.tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
            .unwrap_or_else(|| panic!("the batch has no tensor `{name}`"))
    }

    /// The batch on `device`, floating tensors converted to `kind`.
    pub fn to(&self, device: tch::Device, kind: Kind) -> Result<Batch, TchError> {
        let tensors = self
            .tensors
            .iter()
            .map(|(name, t)| {
                let moved = if is_floating(t.kind()) {
                    t.f_to_device(device)?.f_to_kind(kind)?
                } else {
                    t.f_to_device(device)?
                };
                Ok((name.clone(), moved))
            })
            .collect::<Result<_, TchError>>()?;
        Ok(Batch { tensors })
    }
}

/// Whether a dtype is a floating-point one (the ones a case's dtype applies to).
pub fn is_floating(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double
    )
}

/// PyTorch's name for a dtype (`float32`, `int64`), devcheck-report's.
pub use crate::version::kind_name;

/// What one training step produced.
pub struct StepOutput {
    /// The model's outputs (logits, predictions), named.
    pub outputs: Named,
    /// The scalar loss.
    pub loss: Tensor,
}

/// A model with its optimizer, as a case builds it.
pub trait Model {
    /// One training step: forward, loss, backward, optimizer step.
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError>;

    /// State the var store does not hold: optimizer state, extra buffers.
    fn state(&self) -> Named {
        Vec::new()
    }
}

/// Builds a model (and its optimizer) whose variables live in the given var store.
pub type BuildFn = dyn Fn(&VarStore) -> Result<Box<dyn Model>, TchError> + Send + Sync;
/// Makes the batch of a step, on the CPU, floating tensors in float64.
pub type BatchFn = dyn Fn(u64) -> Result<Batch, TchError> + Send + Sync;
/// Makes the batch of a step at a batch multiplier (`--batch-multiplier`, sweeps).
pub type ScaledBatchFn = dyn Fn(u64, i64) -> Result<Batch, TchError> + Send + Sync;

/// How a case makes its batches.
#[derive(Clone)]
pub(crate) enum Batches {
    /// At its own size; devcheck repeats them to scale.
    Fixed(Arc<BatchFn>),
    /// At any multiple of its own size, made by the case.
    Scaled(Arc<ScaledBatchFn>),
}

/// A tolerance for tensors whose name contains `pattern`.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorTolerance {
    /// Substring of the tensor name (`outputs.logits`, `grad.fc.weight`).
    pub pattern: String,
    /// The tolerance for those tensors.
    pub tolerance: Tolerance,
}

/// Memory check settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryLimits {
    /// Epochs to run.
    pub epochs: usize,
    /// Steps per epoch.
    pub steps_per_epoch: usize,
    /// Largest allowed growth of live memory from the first to the last epoch (0.26 = 26 %).
    pub max_growth: f64,
}

impl Default for MemoryLimits {
    fn default() -> Self {
        Self {
            epochs: 10,
            steps_per_epoch: 2,
            max_growth: 0.26,
        }
    }
}

/// Which check a planted fault targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Fails one named check.
    Check(crate::checks::Check),
    /// Fails every trial of the case (a panic or a libtorch error in the step).
    Crash,
}

/// A training-step case: the unit the matrix runs on every device.
#[derive(Clone)]
pub struct Case {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) kind: Kind,
    pub(crate) reference_kind: Kind,
    pub(crate) seed: i64,
    pub(crate) build: Arc<BuildFn>,
    pub(crate) batch: Batches,
    pub(crate) tolerance: Option<Tolerance>,
    pub(crate) tensor_tolerances: Vec<TensorTolerance>,
    pub(crate) tolerance_reason: Option<String>,
    pub(crate) tolerance_steps: usize,
    pub(crate) readback_budget: usize,
    pub(crate) accepted_fallbacks: Vec<String>,
    pub(crate) memory: MemoryLimits,
    pub(crate) fault: Option<Fault>,
    pub(crate) batch_multiplier: i64,
    pub(crate) time_limit: Option<Duration>,
    pub(crate) host_batches: bool,
    pub(crate) kept_layouts: Vec<(String, String)>,
    pub(crate) deterministic: bool,
}

impl Case {
    /// A case named `name` (stable: it names trials and snapshots).
    pub fn new(
        name: impl Into<String>,
        build: impl Fn(&VarStore) -> Result<Box<dyn Model>, TchError> + Send + Sync + 'static,
        batch: impl Fn(u64) -> Result<Batch, TchError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            kind: Kind::Float,
            reference_kind: Kind::Double,
            seed: 0,
            build: Arc::new(build),
            batch: Batches::Fixed(Arc::new(batch)),
            tolerance: None,
            tensor_tolerances: Vec::new(),
            tolerance_reason: None,
            tolerance_steps: 3,
            readback_budget: 0,
            accepted_fallbacks: Vec::new(),
            memory: MemoryLimits::default(),
            fault: None,
            batch_multiplier: 1,
            time_limit: None,
            host_batches: false,
            kept_layouts: Vec::new(),
            deterministic: false,
        }
    }

    /// One line on what the case trains.
    pub fn describe(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// The floating dtype the case runs in (default float32).
    pub fn dtype(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }

    /// One case per dtype: the first keeps this case's name, the others get the
    /// dtype appended (`cnn`, `cnn-bfloat16`), so trial names stay
    /// `<case>::<check>::<device>`.
    pub fn for_dtypes(self, kinds: &[Kind]) -> Vec<Case> {
        kinds
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                let mut case = self.clone().dtype(*kind);
                if i > 0 {
                    case.name = format!("{}-{}", self.name, kind_name(*kind));
                }
                case
            })
            .collect()
    }

    /// The dtype of the tolerance check's CPU reference run (default float64).
    ///
    /// A step that makes tensors of the case's dtype itself (tch's `onehot` is
    /// always float32) cannot run in float64; with the reference in the case's
    /// own dtype, accelerators are compared with the CPU in that dtype.
    pub fn reference_dtype(mut self, kind: Kind) -> Self {
        self.reference_kind = kind;
        self
    }

    /// The dtype of the tolerance check's reference run.
    pub fn reference_kind(&self) -> Kind {
        self.reference_kind
    }

    /// The seed for initial weights and batches (default 0).
    pub fn seed(mut self, seed: i64) -> Self {
        self.seed = seed;
        self
    }

    /// Replaces the dtype's default tolerance for every tensor, saying why.
    pub fn tolerance(mut self, tolerance: Tolerance, reason: impl Into<String>) -> Self {
        self.tolerance = Some(tolerance);
        self.tolerance_reason = Some(reason.into());
        self
    }

    /// A tolerance for the tensors whose name contains `pattern`, saying why.
    pub fn tensor_tolerance(
        mut self,
        pattern: impl Into<String>,
        tolerance: Tolerance,
        reason: impl Into<String>,
    ) -> Self {
        self.tensor_tolerances.push(TensorTolerance {
            pattern: pattern.into(),
            tolerance,
        });
        self.tolerance_reason = Some(reason.into());
        self
    }

    /// Optimizer steps compared by the tolerance check (default 3).
    pub fn tolerance_steps(mut self, steps: usize) -> Self {
        self.tolerance_steps = steps.max(1);
        self
    }

    /// Hands the step its batch on the CPU, as a data loader does, instead of
    /// already on the device: the step moves it itself (`x.to_device(device)`),
    /// and that copy is judged like any other host-to-device copy. On an
    /// accelerator a blocking copy (tch's `to_device`, or from memory that is
    /// not pinned) fails placement: every step waits for it. Floating tensors
    /// still come in the case's dtype.
    pub fn host_batches(mut self) -> Self {
        self.host_batches = true;
        self
    }

    /// Keeps the batch tensor `name` in the layout the batch function made it
    /// in for the layout check, saying why (a kernel documented to need it).
    pub fn keep_layout(mut self, name: impl Into<String>, reason: impl Into<String>) -> Self {
        self.kept_layouts.push((name.into(), reason.into()));
        self
    }

    /// Why the layout check keeps the batch tensor `name` as it is, if it does.
    pub fn keeps_layout(&self, name: &str) -> Option<&str> {
        self.kept_layouts
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, reason)| reason.as_str())
    }

    /// Requires two runs from the same state to be bitwise identical: the
    /// repeatability check fails instead of reporting a difference.
    pub fn deterministic(mut self) -> Self {
        self.deterministic = true;
        self
    }

    /// Host reads allowed per step (default 0).
    pub fn readback_budget(mut self, reads_per_step: usize) -> Self {
        self.readback_budget = reads_per_step;
        self
    }

    /// Operators allowed to fall back to the CPU on MPS.
    pub fn accept_fallbacks(mut self, ops: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.accepted_fallbacks
            .extend(ops.into_iter().map(Into::into));
        self
    }

    /// Epochs, steps per epoch and allowed growth for the memory check.
    pub fn memory(mut self, limits: MemoryLimits) -> Self {
        self.memory = limits;
        self
    }

    /// Makes batches at any multiple of the case's own size: `batch(step,
    /// multiplier)` replaces the batch function given to [`Case::new`], and
    /// `--batch-multiplier` and sweeps ask it for bigger batches instead of
    /// repeating the case's own (for a step whose shapes follow its batch).
    pub fn scaled_batches(
        mut self,
        batch: impl Fn(u64, i64) -> Result<Batch, TchError> + Send + Sync + 'static,
    ) -> Self {
        self.batch = Batches::Scaled(Arc::new(batch));
        self
    }

    /// The batch multiplier the case runs at (1: its own batches).
    pub fn batch_multiplier_in_use(&self) -> i64 {
        self.batch_multiplier
    }

    /// The step's batch size at the case's multiplier (the first dimension of its
    /// first batch tensor), where it has one.
    pub fn batch_size(&self) -> Option<i64> {
        let batch = self.make_batch(0).ok()?;
        batch.tensors.first()?.1.size().first().copied()
    }

    /// Makes the batch of `step` at the case's multiplier, on the CPU.
    pub(crate) fn make_batch(&self, step: u64) -> Result<Batch, TchError> {
        match &self.batch {
            Batches::Scaled(batch) => batch(step, self.batch_multiplier),
            Batches::Fixed(batch) => {
                let mut made = batch(step)?;
                if self.batch_multiplier > 1 {
                    for (_, tensor) in &mut made.tensors {
                        if tensor.dim() > 0 {
                            let mut repeats = vec![1i64; tensor.dim()];
                            repeats[0] = self.batch_multiplier;
                            *tensor = tensor.f_repeat(&repeats)?;
                        }
                    }
                }
                Ok(made)
            }
        }
    }

    /// Repeats every batch `times` along its first dimension (or, with
    /// [`Case::scaled_batches`], asks the case for batches `times` as big): the
    /// same case, made heavier, so that a step becomes bound by the device
    /// rather than the host.
    pub fn batch_multiplier(mut self, times: i64) -> Self {
        self.batch_multiplier = times.max(1);
        self
    }

    /// How long one trial of this case may run before it is failed as hung
    /// (default: the runner's `--trial-timeout`, 300 s).
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// Marks the case as a planted fault (run only with `--faults`).
    pub fn planted(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    /// The case's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The memory check's settings.
    pub fn memory_limits(&self) -> MemoryLimits {
        self.memory
    }

    /// The case's own trial time limit, if it set one.
    pub fn trial_time_limit(&self) -> Option<Duration> {
        self.time_limit
    }

    /// The case's dtype.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The planted fault, if this is a fault case.
    pub fn fault(&self) -> Option<Fault> {
        self.fault
    }

    /// The tolerance for one tensor: per-tensor override, case override, or the dtype default.
    pub fn tolerance_for(&self, tensor: &str, actual: Kind, expected: Kind) -> Tolerance {
        self.tolerance_override(tensor)
            .unwrap_or_else(|| crate::compare::tolerance_for_pair(actual, expected))
    }

    /// The case's own tolerance for one tensor, if it set one (per tensor, else for the case).
    pub fn tolerance_override(&self, tensor: &str) -> Option<Tolerance> {
        self.tensor_tolerances
            .iter()
            .find(|t| tensor.contains(&t.pattern))
            .map(|t| t.tolerance)
            .or(self.tolerance)
    }

    /// What is wrong with a case's settings, one line per problem (empty: fine).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let name = &self.name;
        if name.is_empty() || name.contains("::") || name.chars().any(char::is_whitespace) {
            problems.push(format!(
                "case `{name}`: a case name must be non-empty, without `::` or spaces (it names trials)"
            ));
        }
        let mut tolerances: Vec<(String, Tolerance)> = Vec::new();
        if let Some(t) = self.tolerance {
            tolerances.push(("tolerance".to_owned(), t));
        }
        for t in &self.tensor_tolerances {
            tolerances.push((format!("tolerance for `{}`", t.pattern), t.tolerance));
        }
        for (what, t) in tolerances {
            for (field, value) in [("rtol", t.rtol), ("atol", t.atol)] {
                if !(value.is_finite() && value >= 0.0) {
                    problems.push(format!(
                        "case `{name}`: {what} has {field} = {value}; it must be a finite number ≥ 0"
                    ));
                }
            }
        }
        let memory = self.memory;
        if !(memory.max_growth.is_finite() && memory.max_growth >= 0.0) {
            problems.push(format!(
                "case `{name}`: memory max_growth = {}; it must be a finite number ≥ 0",
                memory.max_growth
            ));
        }
        if memory.epochs < 2 || memory.steps_per_epoch < 1 {
            problems.push(format!(
                "case `{name}`: the memory check needs at least 2 epochs of at least 1 step, got {} × {}",
                memory.epochs, memory.steps_per_epoch
            ));
        }
        if self.time_limit == Some(Duration::ZERO) {
            problems.push(format!(
                "case `{name}`: a time limit of 0 s lets no trial run"
            ));
        }
        problems
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("fault", &self.fault)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> Case {
        Case::new(
            "net",
            |_vs| Err(TchError::Kind("unused".into())),
            |_step| Ok(Batch::new(Vec::<(String, Tensor)>::new())),
        )
    }

    #[test]
    fn tolerance_lookup_prefers_tensor_then_case_then_dtype_default() {
        let wide = Tolerance {
            rtol: 1e-3,
            atol: 1e-3,
            equal_nan: false,
        };
        let grad = Tolerance {
            rtol: 0.1,
            atol: 0.1,
            equal_nan: false,
        };
        let plain = case();
        assert_eq!(
            plain.tolerance_for("loss", Kind::Float, Kind::Double),
            crate::compare::tolerance_for_pair(Kind::Float, Kind::Double)
        );
        let tuned = case()
            .tolerance(wide, "why")
            .tensor_tolerance("grad.", grad, "why");
        assert_eq!(
            tuned.tolerance_for("grad.fc.weight", Kind::Float, Kind::Double),
            grad
        );
        assert_eq!(
            tuned.tolerance_for("param.fc.weight", Kind::Float, Kind::Double),
            wide
        );
    }

    #[test]
    fn bad_settings_are_named_one_line_each() {
        let bad = Tolerance {
            rtol: -1e-3,
            atol: f64::NAN,
            equal_nan: false,
        };
        let strange = case()
            .tolerance(bad, "why")
            .memory(MemoryLimits {
                epochs: 1,
                steps_per_epoch: 2,
                max_growth: f64::INFINITY,
            })
            .time_limit(Duration::ZERO);
        assert_eq!(
            strange.problems(),
            [
                "case `net`: tolerance has rtol = -0.001; it must be a finite number ≥ 0",
                "case `net`: tolerance has atol = NaN; it must be a finite number ≥ 0",
                "case `net`: memory max_growth = inf; it must be a finite number ≥ 0",
                "case `net`: the memory check needs at least 2 epochs of at least 1 step, got 1 × 2",
                "case `net`: a time limit of 0 s lets no trial run",
            ]
        );
        let mut renamed = case();
        renamed.name = "a::b".into();
        assert_eq!(renamed.problems().len(), 1);
        assert!(case().problems().is_empty());
    }

    #[test]
    fn one_case_per_dtype_with_the_dtype_in_later_names() {
        let cases = case().for_dtypes(&[Kind::Float, Kind::BFloat16]);
        let names: Vec<(&str, Kind)> = cases.iter().map(|c| (c.name(), c.kind())).collect();
        assert_eq!(
            names,
            [("net", Kind::Float), ("net-bfloat16", Kind::BFloat16)]
        );
    }

    #[test]
    fn batches_convert_floating_tensors_only() {
        let batch = Batch::new([
            ("x", Tensor::from_slice(&[1.5f64, 2.5])),
            ("y", Tensor::from_slice(&[1i64, 0])),
        ]);
        let moved = batch.to(tch::Device::Cpu, Kind::Half).unwrap();
        assert_eq!(moved.get("x").kind(), Kind::Half);
        assert_eq!(moved.get("y").kind(), Kind::Int64);
    }
}
