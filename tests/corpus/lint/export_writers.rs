//! A function that copies a whole tensor to write it out (a file, a
//! stream) exports it: the copy is the point, wherever it is called. So
//! does one named for it (`save_checkpoint`) that copies each parameter
//! whole in a loop of its own. One that copies the rows of a device tensor
//! one at a time in a loop of its own still waits once per row where one
//! copy would do.

use std::fs::File;
use std::io::Write;
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn write_tensor(t: &Tensor, path: &str) -> std::io::Result<()> {
    let data: Vec<f32> = Vec::try_from(&t.contiguous().view(-1)).unwrap();
    let mut file = File::create(path)?;
    for value in data {
        file.write_all(&value.to_le_bytes())?;
    }
    Ok(())
}

fn write_rows(t: &Tensor, out: &mut impl Write) -> std::io::Result<()> {
    for i in 0..t.size()[0] {
        let row: Vec<f32> = Vec::try_from(t.get(i)).unwrap(); //~ warning host-sync
        for value in row {
            out.write_all(&value.to_le_bytes())?;
        }
    }
    Ok(())
}

fn save_checkpoint(vs: &nn::VarStore) -> Vec<(String, Vec<f32>)> {
    let mut saved = Vec::new();
    for (name, t) in vs.variables() {
        let data = Vec::<f32>::try_from(&t.to_device(Device::Cpu).view(-1)).unwrap(); //~ note host-sync
        saved.push((name, data));
    }
    saved
}

fn main() -> std::io::Result<()> {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let layers: Vec<nn::Linear> = (0..4)
        .map(|i| nn::linear(vs.root() / i, 16, 16, Default::default()))
        .collect();
    let mut stdout = std::io::stdout();
    for step in 0..100 {
        let mut xs = Tensor::randn([8, 16], (Kind::Float, vs.device()));
        for (i, layer) in layers.iter().enumerate() {
            xs = layer.forward(&xs);
            write_tensor(&xs, &format!("step{step}_layer{i}.bin"))?; //~ note host-sync
        }
        write_rows(&xs, &mut stdout)?; //~ note host-sync
    }
    let mut opt = nn::Sgd::default().build(&vs, 1e-2).unwrap();
    for _ in 0..100 {
        let xs = Tensor::randn([8, 16], (Kind::Float, vs.device()));
        let loss = layers[0].forward(&xs).square().mean(Kind::Float);
        opt.backward_step(&loss);
        let checkpoint = save_checkpoint(&vs); //~ note host-sync
        println!("{} tensors", checkpoint.len());
    }
    Ok(())
}
