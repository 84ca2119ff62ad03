//! One case set up on one device and dtype: initial weights copied from the
//! case's shared initial state, seeded batches, steps, and the named tensors
//! the checks inspect.

use tch::nn::VarStore;
use tch::{Kind, Tensor};

use crate::case::{Batch, Case, Model, Named, StepOutput};
use crate::device::DeviceSpec;
use crate::error::TrialError;

/// What a tensor is to the step, for messages ("the gradient `fc.weight`").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A trainable parameter or buffer held in the var store.
    Parameter,
    /// The gradient of a parameter.
    Gradient,
    /// Optimizer state or another tensor the model keeps.
    State,
    /// A batch input.
    Input,
    /// A model output.
    Output,
    /// The loss.
    Loss,
}

impl Role {
    /// The word used in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Role::Parameter => "parameter",
            Role::Gradient => "gradient",
            Role::State => "state tensor",
            Role::Input => "input",
            Role::Output => "output",
            Role::Loss => "loss",
        }
    }
}

/// A case's model and optimizer on one device and dtype.
pub struct Trainer<'c> {
    case: &'c Case,
    /// The device it runs on.
    pub device: DeviceSpec,
    /// The floating dtype it runs in.
    pub kind: Kind,
    vs: VarStore,
    model: Box<dyn Model>,
}

/// Runs `draw` right after seeding libtorch's one process-wide generator with
/// `seed`, while no other seeded draw of this process runs: trials on other
/// threads (`--test-threads` above 1, the crate's own tests) seed and draw
/// from the same generator, and would otherwise take numbers from between
/// this seed and these draws.
pub(crate) fn seeded<T>(seed: i64, draw: impl FnOnce() -> T) -> T {
    static GENERATOR: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _only = crate::lock(&GENERATOR);
    tch::manual_seed(seed);
    draw()
}

/// The case's initial weights, made once on the CPU from its seed (float32, as
/// tch initializes them); every trainer copies them, so all devices start equal.
pub fn initial_weights(case: &Case) -> Result<Named, TrialError> {
    let vs = VarStore::new(tch::Device::Cpu);
    seeded(case.seed, || (case.build)(&vs))?;
    let mut weights: Named = vs.variables().into_iter().collect();
    weights.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(weights
        .into_iter()
        .map(|(n, t)| (n, t.detach().copy()))
        .collect())
}

/// Where a step that returns an error breaks: runs up to `steps` fresh steps
/// of the case with a stack for every op, and names the user's line (and the
/// tch call made there) of the last op the first failing step started.
/// `None` if every step runs, or the line cannot be found.
pub fn failing_line(
    case: &Case,
    device: DeviceSpec,
    kind: Kind,
    weights: &Named,
    steps: u64,
) -> Option<String> {
    let located = crate::cause::quietly(|| -> Option<String> {
        let mut trainer = Trainer::new(case, device, kind, weights).ok()?;
        let expect = crate::observer::Expectation { device, kind };
        for step in 0..steps {
            let batch = trainer.batch(step).ok()?;
            let (output, trace) =
                crate::observer::observe_every_line(expect, || trainer.step(&batch)).ok()?;
            if output.is_err() {
                return crate::observer::last_call_site(&trace)?.located();
            }
        }
        None
    });
    located.ok().flatten()
}

impl<'c> Trainer<'c> {
    /// Builds the case on `device` in `kind`, with `weights` copied in.
    pub fn new(
        case: &'c Case,
        device: DeviceSpec,
        kind: Kind,
        weights: &Named,
    ) -> Result<Self, TrialError> {
        crate::init()?;
        let mut vs = VarStore::new(device.to_tch());
        let model = seeded(case.seed, || (case.build)(&vs))?;
        vs.set_kind(kind);
        let variables = vs.variables();
        tch::no_grad(|| -> Result<(), TrialError> {
            for (name, source) in weights {
                let target = variables.get(name).ok_or_else(|| {
                    TrialError::Case(format!("the model built no variable `{name}` this time"))
                })?;
                let mut target = target.shallow_clone();
                target.f_copy_(source)?;
            }
            Ok(())
        })?;
        Ok(Self {
            case,
            device,
            kind,
            vs,
            model,
        })
    }

    /// The batch of step `step`: the same values on every device (seeded, made on
    /// the CPU in float64), moved and converted here.
    pub fn batch(&self, step: u64) -> Result<Batch, TrialError> {
        let seed = self
            .case
            .seed
            .wrapping_add(1_000_003)
            .wrapping_add(step as i64);
        let batch = seeded(seed, || self.case.make_batch(step))?;
        let device = if self.case.host_batches {
            tch::Device::Cpu
        } else {
            self.device.to_tch()
        };
        Ok(batch.to(device, self.kind)?)
    }

    /// The storages of a batch handed to the step on the host
    /// (`Case::host_batches`), for the op observer's analysis; none otherwise.
    pub fn host_batch_storages(&self, batch: &Batch) -> Vec<usize> {
        if !self.case.host_batches {
            return Vec::new();
        }
        batch
            .tensors
            .iter()
            .map(|(_, t)| t.data_ptr() as usize)
            .collect()
    }

    /// One training step on a batch.
    pub fn step(&mut self, batch: &Batch) -> Result<StepOutput, TrialError> {
        Ok(self.model.step(batch)?)
    }

    /// Puts every 4-D parameter (a convolution's weight) in channels-last
    /// memory, the same values in another layout, for the layout check; returns
    /// how many. The optimizer holds the same variables, so it updates them there.
    pub fn relayout_parameters(&mut self) -> Result<usize, TrialError> {
        let mut relaid = 0;
        tch::no_grad(|| -> Result<(), TrialError> {
            for (_, mut variable) in self.vs.variables() {
                if variable.dim() == 4 {
                    let channels_last = crate::checks::layout::channels_last(&variable)?;
                    variable.f_set_data(&channels_last)?;
                    relaid += 1;
                }
            }
            Ok(())
        })?;
        Ok(relaid)
    }

    /// Makes batch `step` and runs it.
    pub fn run_step(&mut self, step: u64) -> Result<(Batch, StepOutput), TrialError> {
        let batch = self.batch(step)?;
        let output = self.step(&batch)?;
        Ok((batch, output))
    }

    /// Every tensor of the step, named and with its role: parameters, gradients,
    /// model state, inputs, outputs, loss.
    pub fn tensors(&self, batch: &Batch, output: &StepOutput) -> Vec<(String, Role, Tensor)> {
        let mut variables: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        variables.sort_by(|a, b| a.0.cmp(&b.0));
        let mut all = Vec::new();
        for (name, t) in &variables {
            all.push((format!("param.{name}"), Role::Parameter, t.detach()));
        }
        for (name, t) in &variables {
            let grad = t.grad();
            if grad.defined() {
                all.push((format!("grad.{name}"), Role::Gradient, grad));
            }
        }
        for (name, t) in self.model.state() {
            all.push((format!("state.{name}"), Role::State, t));
        }
        for (name, t) in &batch.tensors {
            all.push((format!("input.{name}"), Role::Input, t.shallow_clone()));
        }
        for (name, t) in &output.outputs {
            all.push((format!("output.{name}"), Role::Output, t.detach()));
        }
        all.push(("loss".to_owned(), Role::Loss, output.loss.detach()));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::nn::{self, Module};

    /// A step that returns libtorch's error on its third batch.
    struct BreaksLater {
        fc: nn::Linear,
        steps: u32,
    }

    impl Model for BreaksLater {
        fn step(&mut self, batch: &Batch) -> Result<StepOutput, tch::TchError> {
            self.steps += 1;
            let x = batch.get("x");
            let x = if self.steps == 3 {
                x.f_view([5, 5])?
            } else {
                x.shallow_clone()
            };
            let out = self.fc.forward(&x);
            let loss = out.f_mean(None)?;
            Ok(StepOutput {
                outputs: vec![("out".into(), out)],
                loss,
            })
        }
    }

    #[test]
    fn a_returned_error_is_found_at_its_line() {
        let case = Case::new(
            "breaks-later",
            |vs| {
                Ok(Box::new(BreaksLater {
                    fc: nn::linear(vs.root() / "fc", 4, 2, Default::default()),
                    steps: 0,
                }) as Box<dyn Model>)
            },
            |_step| {
                Ok(Batch::new([(
                    "x",
                    Tensor::randn([8, 4], (Kind::Double, tch::Device::Cpu)),
                )]))
            },
        );
        let weights = initial_weights(&case).unwrap();
        let line = 1 + include_str!("trainer.rs")
            .lines()
            .position(|l| l.contains("x.f_view([5, 5])?"))
            .unwrap();
        let found = failing_line(&case, DeviceSpec::Cpu, Kind::Float, &weights, 4).unwrap();
        assert!(
            found.starts_with(&format!("harness/src/trainer.rs:{line}:")),
            "{found}"
        );
        assert!(found.ends_with(" (Tensor::view)"), "{found}");
        // Two steps run: nothing to find.
        assert_eq!(
            failing_line(&case, DeviceSpec::Cpu, Kind::Float, &weights, 2),
            None
        );
    }
}
