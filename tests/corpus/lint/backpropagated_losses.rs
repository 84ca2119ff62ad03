//! A tensor the function backpropagates from (`loss.backward()`,
//! `opt.backward_step(&loss)`) is 0-dim: libtorch creates the gradient
//! implicitly only for a 0-dim output. Formatting it with `{:?}` reads its
//! value back, also where a crate function returned it and it is printed
//! before the step. A tensor of unknown shape that nothing backpropagates
//! from may be large, and then `{:?}` prints only its shape and kind.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

struct Classifier {
    net: nn::Sequential,
}

impl Classifier {
    fn forward_train(&self, xs: &Tensor, ys: &Tensor) -> Tensor {
        self.net.forward(xs).cross_entropy_for_logits(ys)
    }

    fn features(&self, xs: &Tensor) -> Tensor {
        self.net.forward(xs)
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = Classifier {
        net: nn::seq().add(nn::linear(vs.root(), 8, 4, Default::default())),
    };
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for step in 0..100 {
        let xs = Tensor::randn([16, 8], (Kind::Float, device));
        let ys = Tensor::zeros([16], (Kind::Int64, device));
        let loss = model.forward_train(&xs, &ys);
        println!("step {step} loss {:?}", loss); //~ warning host-sync
        opt.backward_step(&loss);
        let features = model.features(&xs);
        println!("features {:?}", features);
    }
    for _ in 0..100 {
        let xs = Tensor::randn([16, 8], (Kind::Float, device));
        let ys = Tensor::zeros([16], (Kind::Int64, device));
        let loss = model.forward_train(&xs, &ys);
        opt.zero_grad();
        loss.backward();
        opt.step();
        println!("{loss:?}"); //~ warning host-sync
    }
}
