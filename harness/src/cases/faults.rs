//! Planted faults, run with `--faults`: each fails exactly the check it names
//! (the crash faults fail every trial of their own case), and none stops the
//! other trials.

use tch::nn::{self, Module};
use tch::{Device, Kind, TchError, Tensor};

use super::{cross_entropy, descend, features, labels};
use crate::case::{Batch, Case, Fault, MemoryLimits, Model, Named, StepOutput};
use crate::checks::Check;
use crate::optim::{named_parameters, Optimizer, Sgd};
use crate::readbacks;

pub fn cases() -> Vec<Case> {
    vec![
        placement(),
        readbacks(),
        untracked_sync(),
        tolerance(),
        memory(),
        layout(),
        repeatability(),
        panic(),
        error(),
        unsupported(),
        out_of_memory(),
        hang(),
    ]
}

/// A small MLP classifier the faults are planted into.
struct Mlp {
    hidden: nn::Linear,
    out: nn::Linear,
    optimizer: Sgd,
}

impl Mlp {
    fn new(vs: &nn::VarStore) -> Self {
        let root = vs.root();
        Self {
            hidden: nn::linear(&root / "hidden", 32, 64, Default::default()),
            out: nn::linear(&root / "out", 64, 4, Default::default()),
            optimizer: Sgd::new(named_parameters(vs), 0.05, 0.0),
        }
    }

    fn logits(&self, x: &Tensor) -> Result<Tensor, TchError> {
        Ok(self.out.forward(&self.hidden.forward(x).f_relu()?))
    }
}

fn mlp_batch(_step: u64) -> Result<Batch, TchError> {
    Ok(Batch::new([
        ("features", features(&[16, 32])),
        ("labels", labels(4, 16)),
    ]))
}

fn case(
    name: &str,
    fault: Fault,
    build: impl Fn(Mlp) -> Box<dyn Model> + Send + Sync + 'static,
) -> Case {
    Case::new(name, move |vs| Ok(build(Mlp::new(vs))), mlp_batch).planted(fault)
}

/// Keeps a step counter as a float64 CPU tensor: left behind in dtype and device.
struct LeftBehind {
    mlp: Mlp,
    steps: Tensor,
}

impl Model for LeftBehind {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let logits = self.mlp.logits(batch.get("features"))?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.mlp.optimizer, &loss)?;
        let _ = self.steps.f_add_scalar_(1.0)?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        let mut state = self.mlp.optimizer.state();
        state.push(("step_count".into(), self.steps.shallow_clone()));
        state
    }
}

fn placement() -> Case {
    case("fault-placement", Fault::Check(Check::Placement), |mlp| {
        Box::new(LeftBehind {
            mlp,
            steps: Tensor::zeros([], (Kind::Double, Device::Cpu)),
        })
    })
}

/// Reads every per-sample loss to the host, one read per sample per step.
struct ChattyLogger {
    mlp: Mlp,
}

impl Model for ChattyLogger {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let logits = self.mlp.logits(batch.get("features"))?;
        let per_sample = logits.f_log_softmax(-1, logits.kind())?.f_nll_loss_nd(
            batch.get("labels"),
            None::<Tensor>,
            tch::Reduction::None,
            -100,
        )?;
        for i in 0..per_sample.size()[0] {
            readbacks::scalar_f64(&per_sample.f_get(i)?)?;
        }
        let loss = per_sample.f_mean(None)?;
        descend(&mut self.mlp.optimizer, &loss)?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn readbacks() -> Case {
    case("fault-readbacks", Fault::Check(Check::Readbacks), |mlp| {
        Box::new(ChattyLogger { mlp })
    })
    .readback_budget(1)
}

/// Logs the loss with a plain `double_value`, not through `devcheck::readbacks`:
/// the op observer sees it on every device (CUDA's sync-debug mode too), and
/// names its line.
struct UntrackedLogger {
    mlp: Mlp,
    last: f64,
}

impl Model for UntrackedLogger {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let logits = self.mlp.logits(batch.get("features"))?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.mlp.optimizer, &loss)?;
        self.last = loss.double_value(&[]);
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn untracked_sync() -> Case {
    case(
        "fault-untracked-sync",
        Fault::Check(Check::Readbacks),
        |mlp| {
            Box::new(UntrackedLogger {
                mlp,
                last: f64::NAN,
            })
        },
    )
    .describe("an unwrapped double_value in the step, over a budget of 0: seen on every device")
}

/// Softmax written as exp(x) / sum(exp(x)) on logits squashed to ±300: float32
/// overflows (e^88.7 is its largest) to inf/inf = NaN where float64 (e^709.8) does not.
struct NaiveSoftmax {
    mlp: Mlp,
}

impl Model for NaiveSoftmax {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let logits = self
            .mlp
            .logits(batch.get("features"))?
            .f_tanh()?
            .f_mul_scalar(300.0)?;
        let exp = logits.f_exp()?;
        let probabilities = exp.f_div(&exp.f_sum_dim_intlist(-1, true, None)?)?;
        let picked = probabilities.f_gather(1, &batch.get("labels").f_unsqueeze(1)?, false)?;
        let loss = picked.f_log()?.f_neg()?.f_mean(None)?;
        descend(&mut self.mlp.optimizer, &loss)?;
        Ok(StepOutput {
            outputs: vec![("probabilities".into(), probabilities)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn tolerance() -> Case {
    case("fault-tolerance", Fault::Check(Check::Tolerance), |mlp| {
        Box::new(NaiveSoftmax { mlp })
    })
}

/// Keeps every step's activations "for a plot later": tensors retained across steps.
struct History {
    mlp: Mlp,
    kept: Vec<Tensor>,
}

impl Model for History {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let hidden = self.mlp.hidden.forward(batch.get("features")).f_relu()?;
        let logits = self.mlp.out.forward(&hidden);
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.mlp.optimizer, &loss)?;
        self.kept.push(hidden);
        self.kept.push(batch.get("features").shallow_clone());
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn memory() -> Case {
    case("fault-memory", Fault::Check(Check::Memory), |mlp| {
        Box::new(History {
            mlp,
            kept: Vec::new(),
        })
    })
    .memory(MemoryLimits::default())
}

/// A hand-written kernel that reads its input's storage in row-major order
/// whatever its strides (`as_strided`): right on the contiguous batches a
/// loader makes, wrong on any other layout of the same values.
struct ReadsStorageInOrder {
    mlp: Mlp,
}

impl Model for ReadsStorageInOrder {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let features = batch.get("features");
        let size = features.size();
        let row_major = [size[1], 1];
        let features = features.f_as_strided(&size[..], &row_major[..], None::<i64>)?;
        let logits = self.mlp.logits(&features)?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.mlp.optimizer, &loss)?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn layout() -> Case {
    case("fault-layout", Fault::Check(Check::Layout), |mlp| {
        Box::new(ReadsStorageInOrder { mlp })
    })
}

/// Sums the output layer's partial products in a hash map's iteration order,
/// which changes from map to map: the rounding changes from run to run, as
/// an atomics-based reduction's does on a GPU.
struct SumsInHashOrder {
    mlp: Mlp,
}

impl Model for SumsInHashOrder {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let hidden = self.mlp.hidden.forward(batch.get("features")).f_relu()?;
        let weight = &self.mlp.out.ws;
        let mut partials = std::collections::HashMap::new();
        for i in 0..8 {
            let part = hidden
                .f_narrow(1, i * 8, 8)?
                .f_matmul(&weight.f_narrow(1, i * 8, 8)?.f_tr()?)?;
            partials.insert(i, part);
        }
        let mut logits = match &self.mlp.out.bs {
            Some(bias) => bias.f_expand([16, 4], false)?,
            None => Tensor::f_zeros([16, 4], (hidden.kind(), hidden.device()))?,
        };
        for (_, part) in partials {
            logits = logits.f_add(&part)?;
        }
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.mlp.optimizer, &loss)?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.mlp.optimizer.state()
    }
}

fn repeatability() -> Case {
    case(
        "fault-repeatability",
        Fault::Check(Check::Repeatability),
        |mlp| Box::new(SumsInHashOrder { mlp }),
    )
    .deterministic()
}

struct Panics;

impl Model for Panics {
    fn step(&mut self, _batch: &Batch) -> Result<StepOutput, TchError> {
        panic!("planted panic: the step gave up");
    }
}

fn panic() -> Case {
    case("fault-panic", Fault::Crash, |_mlp| Box::new(Panics))
}

/// Feeds 32 features to a layer that expects 48: libtorch rejects the shapes.
struct ShapeMismatch {
    wrong: Tensor,
}

impl Model for ShapeMismatch {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let logits = batch.get("features").f_matmul(&self.wrong)?;
        let loss = logits.f_mean(None)?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }
}

fn error() -> Case {
    Case::new(
        "fault-error",
        |vs| {
            let wrong = vs.root().zeros("wrong", &[48, 4]);
            Ok(Box::new(ShapeMismatch { wrong }) as Box<dyn Model>)
        },
        mlp_batch,
    )
    .planted(Fault::Crash)
}

/// Multiplies boolean masks with `matmul`, which libtorch does not implement
/// for `bool`: an unsupported operator.
struct Unsupported {
    mlp: Mlp,
}

impl Model for Unsupported {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let mask = batch.get("features").f_gt(0.0)?;
        let _overlap = mask.f_matmul(&mask.f_tr()?)?;
        let logits = self.mlp.logits(batch.get("features"))?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }
}

fn unsupported() -> Case {
    case("fault-unsupported", Fault::Crash, |mlp| {
        Box::new(Unsupported { mlp })
    })
}

/// Materializes attention scores for 2^29 tokens, (2^29)² float32 = 1 EiB (2 EiB
/// in float64): more than any device (or address space) holds, so the
/// allocation fails at once, touching nothing.
struct OutOfMemory {
    mlp: Mlp,
}

impl Model for OutOfMemory {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let features = batch.get("features");
        let tokens = 1i64 << 29;
        let _scores = Tensor::f_empty([tokens, tokens], (features.kind(), features.device()))?;
        let logits = self.mlp.logits(features)?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }
}

fn out_of_memory() -> Case {
    case("fault-oom", Fault::Crash, |mlp| {
        Box::new(OutOfMemory { mlp })
    })
}

/// Waits for a batch from a loader whose worker died without closing its
/// channel: the step never returns.
struct Hang {
    mlp: Mlp,
    _worker: std::sync::mpsc::Sender<Tensor>,
    batches: std::sync::mpsc::Receiver<Tensor>,
}

impl Model for Hang {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
        let features = self
            .batches
            .recv()
            .map_err(|e| TchError::Kind(format!("the loader is gone: {e}")))?;
        let logits = self.mlp.logits(&features)?;
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }
}

fn hang() -> Case {
    case("fault-hang", Fault::Crash, |mlp| {
        let (worker, batches) = std::sync::mpsc::channel();
        Box::new(Hang {
            mlp,
            _worker: worker,
            batches,
        })
    })
    // Short, so that `--faults` stays quick: the first trial hangs, and the case's
    // other trials are failed at once.
    .time_limit(std::time::Duration::from_secs(3))
}
