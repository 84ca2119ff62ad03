//! A guard on how far a counter has gone since a mark that its branch moves
//! up to the counter (`if step - last_eval >= every { last_eval = step; .. }`)
//! holds once per that distance, as `step % every == 0` does: a read in it
//! is a note in a loop and nothing in a function a loop calls. A guard on the distance alone, whose branch leaves the mark
//! where it is, holds on every step past it.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Search {
    count: usize,
    last_decomposition: usize,
    covariance: Tensor,
    scale: Tensor,
}

impl Search {
    pub fn tell(&mut self, losses: &Tensor, threshold: f64) -> f64 {
        self.count += 1;
        if (self.count - self.last_decomposition) as f64 > threshold {
            self.last_decomposition = self.count;
            let (values, _) = self.covariance.linalg_eigh("L");
            self.scale = values.sqrt();
        }
        losses.min().double_value(&[]) //~ warning host-sync
    }
}

pub fn train(search: &mut Search, model: &nn::Sequential, opt: &mut nn::Optimizer, xs: &Tensor) {
    let mut last_eval = 0;
    let mut last_log = 0;
    for step in 0..10_000 {
        let loss = model.forward(xs).mean(Kind::Float);
        opt.backward_step(&loss);
        let best = search.tell(&loss, 50.0); //~ warning host-sync
        if step - last_eval >= 500 {
            last_eval = step;
            println!("{step}: {} {best}", loss.double_value(&[])); //~ note host-sync
        }
        if step - last_log >= 100 {
            println!("{step}: {}", loss.double_value(&[])); //~ warning host-sync
        }
        last_log = last_log.max(0);
    }
}

pub fn run() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut search = Search {
        count: 0,
        last_decomposition: 0,
        covariance: Tensor::eye(4, (Kind::Float, device)),
        scale: Tensor::ones([4], (Kind::Float, device)),
    };
    let xs = Tensor::randn([8, 4], (Kind::Float, device));
    train(&mut search, &model, &mut opt, &xs);
}
