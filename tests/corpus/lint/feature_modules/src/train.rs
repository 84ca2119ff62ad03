use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub fn train(device: Device, steps: usize) {
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 8, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let xs = Tensor::randn([32, 8], (Kind::Float, device));
    for _ in 0..steps {
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}
