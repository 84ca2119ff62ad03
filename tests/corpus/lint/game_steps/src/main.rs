mod pool;

use tch::{CModule, Device, IValue, Tensor};

fn to_vec(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.to_device(Device::Cpu).view([-1])).unwrap() //~ warning host-sync
}

fn main() {
    let device = Device::cuda_if_available();
    let model = CModule::load_on_device("net.pt", device).unwrap();
    let mut games: Vec<pool::Game> = (0..64)
        .map(|_| pool::Game { pending: None, moves: 0 })
        .collect();
    loop {
        games.iter_mut().for_each(|g| g.pump());
        let leaves: Vec<f32> = games.iter().filter_map(|g| g.pending.clone()).flatten().collect();
        if leaves.is_empty() {
            break;
        }
        let xs = Tensor::from_slice(&leaves).view([-1, 16]).to_device(device);
        let out = model.forward_is(&[IValue::Tensor(xs)]).unwrap();
        let IValue::Tensor(policy) = out else { panic!("expected a tensor") };
        let policy = to_vec(&policy); //~ warning host-sync
        for game in games.iter_mut() {
            game.back_up(&policy);
        }
    }
}
