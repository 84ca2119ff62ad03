use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub fn train(steps: usize) {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::linear(vs.root(), 16, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for step in 0..steps {
        let xs = Tensor::randn([32, 16], (Kind::Float, vs.device()));
        let loss = net.forward(&xs).square().mean(Kind::Float);
        opt.backward_step(&loss);
        #[cfg(feature = "logging")]
        println!("step {step}: {}", loss.double_value(&[])); //~ warning host-sync
        #[cfg(feature = "profiling")]
        println!("step {step}: {:?}", loss.to_device(Device::Cpu)); //~ note host-sync
        let _ = step;
    }
}
