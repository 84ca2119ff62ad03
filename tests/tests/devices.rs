//! The README's "your own cases" example, compiled and run as a user would
//! (`harness = false`): one small case, trained the tch way, through devcheck's
//! libtest interface.

use devcheck::{Batch, Case, Model, StepOutput};
use tch::nn::{self, Module, OptimizerConfig};

struct Net {
    fc: nn::Linear,
    optimizer: nn::Optimizer,
    last_loss: f64,
}

impl Model for Net {
    fn step(&mut self, batch: &Batch) -> Result<StepOutput, tch::TchError> {
        let logits = self.fc.forward(batch.get("x"));
        let loss = logits.f_cross_entropy_loss::<tch::Tensor>(
            batch.get("y"),
            None,
            tch::Reduction::Mean,
            -100,
            0.0,
        )?;
        self.optimizer.backward_step(&loss);
        self.last_loss = f64::try_from(&loss)?; // a host sync: counted against the budget
        Ok(StepOutput {
            outputs: vec![("logits".into(), logits)],
            loss,
        })
    }
}

fn main() -> std::process::ExitCode {
    let case = Case::new(
        "net",
        |vs| {
            Ok(Box::new(Net {
                fc: nn::linear(vs.root() / "fc", 8, 2, Default::default()),
                optimizer: nn::Adam::default().build(vs, 1e-3)?,
                last_loss: f64::NAN,
            }) as Box<dyn Model>)
        },
        |_step| {
            Ok(Batch::new([
                (
                    "x",
                    tch::Tensor::randn([16, 8], (tch::Kind::Double, tch::Device::Cpu)),
                ),
                (
                    "y",
                    tch::Tensor::randint(2, [16], (tch::Kind::Int64, tch::Device::Cpu)),
                ),
            ]))
        },
    )
    .readback_budget(1);
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = match devcheck::Options::parse(&args) {
        Ok(options) => options,
        Err(error) => return error.print(),
    };
    // This repository keeps every snapshot under snapshots/; a user's crate uses its own.
    options
        .snapshots
        .get_or_insert_with(|| devcheck_tests::workspace_root().join("snapshots/matrix"));
    options.timing.max_time = std::time::Duration::from_millis(200);
    devcheck::run_with(vec![case], options)
}
