//! Modules built from closures. A module computes where its weights are
//! and, as libtorch refuses to mix a CPU tensor with a device one, on the
//! CPU when its input is (the program would fail otherwise), unless it moves
//! its input: a closure given to `nn::func` or `add_fn` that calls
//! `to_device` on its input computes where it moves it, whatever the input.
//! `xs.apply(&m)` runs `m.forward(xs)`; a function returning `impl Module`
//! is the one module its body builds, not every impl of the trait.

use tch::{nn, nn::Module, Device, Kind, Tensor};

/// Moves its input to where its weights are.
fn moving(p: &nn::Path) -> impl Module {
    let device = p.device();
    let linear = nn::linear(p / "l", 4, 4, Default::default());
    nn::func(move |xs| xs.to_device(device).apply(&linear).relu())
}

fn moving_seq(p: &nn::Path) -> nn::Sequential {
    let device = p.device();
    nn::seq()
        .add_fn(move |xs| xs.to_device(device))
        .add(nn::linear(p / "l", 4, 4, Default::default()))
        .add_fn(|xs| xs.relu())
}

/// Runs on its input where it is.
fn plain(p: &nn::Path) -> impl Module {
    let linear = nn::linear(p / "l", 4, 4, Default::default());
    nn::func(move |xs| xs.apply(&linear).relu())
}

/// Another impl of `Module` in the crate, which `moving(..)` does not return.
pub struct Scale;

impl Module for Scale {
    fn forward(&self, xs: &Tensor) -> Tensor {
        xs * 2.0
    }
}

pub fn on_a_device(rows: &[Vec<f32>], device: Device) -> f64 {
    let vs = nn::VarStore::new(device);
    let model = moving(&vs.root());
    let seq = moving_seq(&vs.root());
    let other = plain(&vs.root());
    let mut total = 0.0;
    for row in rows {
        let xs = Tensor::from_slice(row);
        total += model.forward(&xs).sum(Kind::Float).double_value(&[]); //~ warning host-sync
        total += xs.apply(&model).sum(Kind::Float).double_value(&[]); //~ warning host-sync
        total += seq.forward(&xs).sum(Kind::Float).double_value(&[]); //~ warning host-sync
        total += xs.apply(&seq).sum(Kind::Float).double_value(&[]); //~ warning host-sync
        // Weights that may be on a device, an input on the CPU, no move:
        // this runs only if the weights are on the CPU too.
        total += other.forward(&xs).sum(Kind::Float).double_value(&[]);
        total += xs.apply(&other).sum(Kind::Float).double_value(&[]);
        let on_device = xs.to_device(device);
        total += other.forward(&on_device).sum(Kind::Float).double_value(&[]); //~ warning host-sync
    }
    total
}

pub fn on_the_cpu(rows: &[Vec<f32>]) -> f64 {
    let vs = nn::VarStore::new(Device::Cpu);
    let model = moving(&vs.root());
    let mut total = 0.0;
    for row in rows {
        let xs = Tensor::from_slice(row);
        total += model.forward(&xs).sum(Kind::Float).double_value(&[]);
        total += xs.apply(&model).sum(Kind::Float).double_value(&[]);
    }
    total
}
