//! A loop whose body leaves it unconditionally on its first pass (`for b
//! in batches { ..; break; }`) runs its body once: what it holds sits where
//! the loop does (once per epoch here, a note), and what follows the
//! `break` never runs. The same single pass inside the step loop is still
//! once per step.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

#[allow(unreachable_code)]
fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 32, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let batches: Vec<Tensor> = (0..16)
        .map(|_| Tensor::randn([8, 32], (Kind::Float, device)))
        .collect();
    for _epoch in 0..10 {
        for xs in batches.iter() {
            let loss = model.forward(xs).square().mean(Kind::Float);
            opt.backward_step(&loss);
            loop {
                let norm = model.ws.norm().double_value(&[]); //~ warning host-sync
                println!("{norm}");
                break;
            }
        }
        // A quick look at the first batch only.
        for xs in batches.iter() {
            let out = model.forward(xs);
            out.print(); //~ note host-sync
            break;
            let rows = Vec::<f32>::try_from(&out.view(-1)).unwrap();
            println!("{rows:?}");
        }
    }
}
