//! The issue-report classifier: token embeddings (32 × 128 × 768) averaged over
//! tokens, one linear layer to three labels (needs_docs, needs_test,
//! needs_review), SGD and cross-entropy. It logs the loss once per step
//! through a tracked read, within its budget of one.

use tch::nn::{self, Module};

use super::{cross_entropy, descend, features, labels};
use crate::case::{Batch, Case, Model, Named, StepOutput};
use crate::optim::{named_parameters, Optimizer, Sgd};
use crate::readbacks;

/// The labels, in logit order.
pub const LABELS: [&str; 3] = ["needs_docs", "needs_test", "needs_review"];

struct Classifier {
    head: nn::Linear,
    optimizer: Sgd,
    last_loss: f64,
}

impl Model for Classifier {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, tch::TchError> {
        let pooled = batch.get("tokens").f_mean_dim(1, false, None)?;
        let logits = self.head.forward(&pooled);
        let loss = cross_entropy(&logits, batch.get("labels"))?;
        descend(&mut self.optimizer, &loss)?;
        // The one host read per step a training loop typically makes: logging.
        self.last_loss = readbacks::scalar_f64(&loss)?;
        Ok(StepOutput {
            outputs: vec![("logits".to_owned(), logits)],
            loss,
        })
    }

    fn state(&self) -> Named {
        self.optimizer.state()
    }
}

pub fn case() -> Case {
    Case::new(
        "classifier",
        |vs| {
            let head = nn::linear(
                vs.root() / "head",
                768,
                LABELS.len() as i64,
                Default::default(),
            );
            let optimizer = Sgd::new(named_parameters(vs), 0.1, 0.0);
            Ok(Box::new(Classifier {
                head,
                optimizer,
                last_loss: f64::NAN,
            }) as Box<dyn Model>)
        },
        |_step| {
            Ok(Batch::new([
                ("tokens", features(&[32, 128, 768])),
                ("labels", labels(LABELS.len() as i64, 32)),
            ]))
        },
    )
    .describe(
        "issue-report classifier: mean over 128 tokens of 768-d embeddings, Linear(768, 3), SGD",
    )
    .readback_budget(1)
}
