//! A dataset loaded on the CPU whose fields are then moved to the device
//! in place (`m.train_images = m.train_images.to_device(device)`) holds
//! device data from then on: the batches cut from it, and the losses
//! computed on them, are on the device, so the per-batch read waits.

use tch::{nn, nn::Module, vision, Device, Tensor};

fn train(net: &nn::Sequential, data: &[(Tensor, Tensor)]) -> f64 {
    let mut total = 0.0;
    for (x, y) in data {
        let loss = net.forward(x).cross_entropy_for_logits(y);
        total += f64::try_from(&loss).unwrap(); //~ warning host-sync
    }
    total
}

fn batches(features: &Tensor, labels: &Tensor) -> Vec<(Tensor, Tensor)> {
    let mut out = Vec::new();
    for i in 0..10 {
        out.push((features.narrow(0, i * 64, 64), labels.narrow(0, i * 64, 64)));
    }
    out
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 784, 10, Default::default()));
    let mut m = vision::mnist::load_dir("data").unwrap();
    m.train_images = m.train_images.to_device(device);
    m.train_labels = m.train_labels.to_device(device);
    let data = batches(&m.train_images, &m.train_labels);
    println!("{}", train(&net, &data));
}
