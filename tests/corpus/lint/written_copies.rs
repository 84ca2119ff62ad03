//! A whole tensor copied to the host and bound to a local that a writer
//! then takes (`write_frame(&data)`, `save_features(&features)`) is what is
//! written out: one copy per item whose copy is the point, a note, whether
//! the copy is written in the loop or made by a helper that returns it. So
//! is a copy made in the writer's own receiver or arguments
//! (`t.to_device(Device::Cpu).write_npy(path)`). A copy the loop computes
//! with stays a warning, and so does a scalar read that is only logged: it
//! waits on every step for one number, also where a helper that returns it
//! is called in a writer's arguments.

use std::fs::File;
use std::io::Write;
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn write_frame(file: &mut File, data: &[f32]) -> std::io::Result<()> {
    for value in data {
        file.write_all(&value.to_le_bytes())?;
    }
    Ok(())
}

fn save_features(features: &Tensor, index: usize) {
    println!("features {index}: {:?}", features.size());
}

fn write_log(file: &mut File, step: usize, loss: f64) -> std::io::Result<()> {
    writeln!(file, "{step} {loss}")
}

fn current_scale(scale: &Tensor) -> f32 {
    Vec::<f32>::try_from(scale).unwrap()[0] //~ warning host-sync
}

fn extract(model: &nn::Linear, xs: &Tensor) -> Tensor {
    model.forward(xs).to_device(Device::Cpu)
}

fn main() -> std::io::Result<()> {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 64, 64, Default::default());
    let mut out_file = File::create("frames.bin")?;
    for _frame in 0..1000 {
        let xs = Tensor::randn([1, 64], (Kind::Float, device));
        let out = model.forward(&xs);
        let data = Vec::<f32>::try_from(&out.view(-1)).unwrap(); //~ note host-sync
        write_frame(&mut out_file, &data)?;
    }
    for index in 0..1000 {
        let xs = Tensor::randn([8, 64], (Kind::Float, device));
        let features = extract(&model, &xs); //~ note host-sync
        save_features(&features, index);
    }
    for _frame in 0..1000 {
        let xs = Tensor::randn([1, 64], (Kind::Float, device));
        let probs = Vec::<f32>::try_from(&model.forward(&xs).view(-1)).unwrap(); //~ warning host-sync
        let best = probs.iter().cloned().fold(f32::MIN, f32::max);
        println!("{best}");
    }
    for chunk in 0..100 {
        let xs = Tensor::randn([8, 64], (Kind::Float, device));
        let codes = model.forward(&xs).argmax(-1, false);
        codes
            .to_device(Device::Cpu) //~ note host-sync
            .write_npy(format!("{chunk}.codes.npy"))
            .unwrap();
        save_features(&model.forward(&xs).to_device(Device::Cpu), chunk); //~ note host-sync
    }
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut log = File::create("loss.txt")?;
    for step in 0..1000 {
        let xs = Tensor::randn([8, 64], (Kind::Float, device));
        let loss = model.forward(&xs).square().mean(Kind::Float);
        opt.backward_step(&loss);
        let value = f64::try_from(&loss).unwrap(); //~ warning host-sync
        write_log(&mut log, step, value)?;
    }
    let scale = Tensor::full([1], 65536.0, (Kind::Float, device));
    for step in 0..1000 {
        write_log(&mut log, step, current_scale(&scale) as f64)?; //~ warning host-sync
    }
    Ok(())
}
