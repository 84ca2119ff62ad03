//! The built-in cases: what `cargo xtask matrix` runs by default, and the
//! planted faults it runs with `--faults` to prove each check can fail.

mod classifier;
mod cnn;
mod faults;
mod lstm;
mod transformer;

use tch::{Kind, TchError, Tensor};

use crate::case::{Case, Model, StepOutput};
use crate::optim::Optimizer;

/// Every built-in case, faults included (the runner skips faults unless asked).
pub fn builtin() -> Vec<Case> {
    let mut cases = vec![
        classifier::case(),
        cnn::case(),
        transformer::case(),
        lstm::case(),
    ];
    cases.extend(faults::cases());
    cases
}

/// Backward and optimizer step for a loss; the shape every case's step ends with.
fn descend(optimizer: &mut dyn Optimizer, loss: &Tensor) -> Result<(), TchError> {
    optimizer.zero_grad();
    loss.f_backward()?;
    optimizer.step()
}

/// Cross-entropy of logits against class indices, in the logits' dtype.
fn cross_entropy(logits: &Tensor, labels: &Tensor) -> Result<Tensor, TchError> {
    logits.f_log_softmax(-1, logits.kind())?.f_nll_loss(
        labels,
        None::<Tensor>,
        tch::Reduction::Mean,
        -100,
    )
}

/// A model defined by a forward function, a loss and an optimizer.
struct Supervised<F> {
    forward: F,
    optimizer: Box<dyn Optimizer + Send>,
    input: &'static str,
    target: &'static str,
    classify: bool,
}

impl<F: Fn(&Tensor) -> Result<Tensor, TchError>> Model for Supervised<F> {
    fn step(&mut self, batch: &crate::Batch) -> Result<StepOutput, TchError> {
        let prediction = (self.forward)(batch.get(self.input))?;
        let target = batch.get(self.target);
        let loss = if self.classify {
            cross_entropy(&prediction, target)?
        } else {
            prediction.f_mse_loss(target, tch::Reduction::Mean)?
        };
        descend(self.optimizer.as_mut(), &loss)?;
        Ok(StepOutput {
            outputs: vec![("prediction".to_owned(), prediction)],
            loss,
        })
    }

    fn state(&self) -> crate::case::Named {
        self.optimizer.state()
    }
}

/// Standard-normal features of `shape`, float64 on the CPU (the harness converts).
fn features(shape: &[i64]) -> Tensor {
    Tensor::randn(shape, (Kind::Double, tch::Device::Cpu))
}

/// Uniform class labels in `0..classes`.
fn labels(classes: i64, batch: i64) -> Tensor {
    Tensor::randint(classes, [batch], (Kind::Int64, tch::Device::Cpu))
}
