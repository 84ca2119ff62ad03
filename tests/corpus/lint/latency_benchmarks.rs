//! A latency benchmark: `for _ in 0..n` between an `Instant::now()` and its
//! `elapsed()`, outside any other loop. Each iteration is one request whose
//! answer is copied back, and timing that is the point: a note. A timed
//! training loop, a timed generation loop feeding each token to the next
//! step, and a timed loop over data stay per step.
use std::time::Instant;
use tch::{nn, nn::Module, nn::OptimizerConfig, CModule, Device, Kind, Tensor};

fn bench(model: &CModule, device: Device) {
    let start = Instant::now();
    let mut checksum = 0.0;
    for _ in 0..1000 {
        let input = Tensor::zeros([8, 16], (Kind::Float, device));
        let output = model.forward_ts(&[input]).unwrap();
        let mut host = vec![0f32; output.numel()];
        output.copy_data(&mut host, output.numel()); //~ note host-sync
        checksum += host[0];
    }
    println!("{checksum} in {:?}", start.elapsed());
}

fn train(device: Device) {
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 16, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let start = Instant::now();
    for _ in 0..1000 {
        let xs = Tensor::randn([8, 16], (Kind::Float, device));
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
    println!("trained in {:?}", start.elapsed());
}

fn generate(model: &CModule, device: Device) {
    let start = Instant::now();
    let mut token = Tensor::zeros([1, 1], (Kind::Int64, device));
    for _ in 0..256 {
        let logits = model.forward_ts(&[&token]).unwrap();
        token = logits.argmax(-1, false).unsqueeze(0);
        print!("{} ", token.int64_value(&[0, 0])); //~ warning host-sync
    }
    println!("{:?} per token", start.elapsed() / 256);
}

fn evaluate(model: &CModule, batches: &[Tensor], device: Device) {
    let start = Instant::now();
    let mut total = 0.0;
    for batch in batches {
        let output = model.forward_ts(&[batch.to_device(device)]).unwrap();
        total += output.mean(Kind::Float).double_value(&[]); //~ warning host-sync
    }
    println!("{total} in {:?}", Instant::now() - start);
}

fn main() {
    let device = Device::cuda_if_available();
    let model = CModule::load_on_device("model.pt", device).unwrap();
    bench(&model, device);
    train(device);
    generate(&model, device);
    let batches: Vec<Tensor> = (0..10).map(|_| Tensor::randn([8, 16], (Kind::Float, Device::Cpu))).collect();
    evaluate(&model, &batches, device);
}
