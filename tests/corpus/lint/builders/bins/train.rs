use agents::agent::{Builder, DeviceScorer, Scorer};
use tch::{nn::VarStore, Device, Tensor};

fn main() {
    let device = Device::Cpu;
    let agent = Builder::default().vs(VarStore::new(device)).width(4).build();
    let observations = vec![Tensor::zeros([4], (tch::Kind::Float, Device::Cpu))];
    println!("{}", agent.play(&observations));
    let scorer = Scorer::builder().device(device).width(4).build();
    println!("{}", scorer.scores(&[vec![1.0; 4]]));
    let on_device = DeviceScorer::builder().device(Device::cuda_if_available()).build();
    println!("{}", on_device.scores(&[vec![1.0; 4]]));
}
