//! A loss or a score kept in a field as a closure or a function pointer:
//! calling it gives what its type says it returns, a tensor or a number.

use tch::{nn, nn::Module, Tensor};

pub struct Trainer {
    net: nn::Sequential,
    loss: Box<dyn Fn(&Tensor, &Tensor) -> Tensor>,
    accuracy: fn(&Tensor, &Tensor) -> f64,
}

impl Trainer {
    pub fn fit(&self, batches: &[(Tensor, Tensor)], opt: &mut nn::Optimizer) {
        for (xs, ys) in batches {
            let logits = self.net.forward(xs);
            let loss = (self.loss)(&logits, ys);
            opt.backward_step(&loss);
            println!("loss {}", loss); //~ warning host-sync
            // A number, already on the host.
            println!("accuracy {}", (self.accuracy)(&logits, ys));
        }
    }
}

pub struct Scorer<F: Fn(&Tensor) -> Tensor> {
    score: F,
}

impl<F: Fn(&Tensor) -> Tensor> Scorer<F> {
    pub fn log(&self, batches: &[Tensor]) {
        for xs in batches {
            let score = (self.score)(xs);
            println!("score {}", score); //~ warning host-sync
        }
    }
}
