//! A loop that runs a few times fixed in the source (`for i in 0..8`, an
//! array literal of names) and reads a different whole tensor each time
//! round is a short sequence of reads, not a loop of its own: it counts
//! where the code around it runs. Once per request it is silent; inside a
//! training step it waits once per step. One tensor read element by
//! element in such a loop is still a loop of reads.

use std::collections::HashMap;

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, IValue, Kind, Tensor};

const NAMES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// One request: eight outputs of a scripted model, one read each.
pub fn parse_outputs(outputs: &[IValue]) -> HashMap<String, f32> {
    let mut out = HashMap::new();
    for i in 0..8 {
        let tensor = match &outputs[i + 2] {
            IValue::Tensor(t) => t,
            _ => continue,
        };
        out.insert(NAMES[i].to_string(), f32::try_from(tensor).unwrap());
    }
    out
}

/// Four weights copied out once, for export.
pub fn export(weights: &HashMap<String, Tensor>, out: &mut Vec<f32>) {
    let keys = ["layer1.bias", "layer2.weight", "layer2.bias", "layer3.weight"];
    for key in keys {
        let w = &weights[key];
        let mut tmp = vec![0f32; w.numel()];
        w.copy_data(&mut tmp, w.numel());
        out.extend(tmp);
    }
}

pub fn train(vs: &nn::VarStore, net: &nn::Sequential, steps: usize) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    let device = Device::cuda_if_available();
    for _ in 0..steps {
        let xs = Tensor::rand([32, 4], (Kind::Float, device));
        let out = net.forward(&xs);
        let loss = out.mean(Kind::Float);
        opt.backward_step(&loss);
        let parts = [loss.shallow_clone(), out.max()];
        for part in &parts {
            println!("{}", f64::try_from(part).unwrap()); //~ warning host-sync
        }
        let probs = out.softmax(-1, Kind::Float).get(0);
        for i in 0..4 {
            print!("{} ", probs.double_value(&[i])); //~ warning host-sync
        }
    }
}
