//! A TorchScript module's `forward_is` returns an `IValue`: its
//! `IValue::Tensor(t)` parts are tensors wherever the module runs, and
//! `IValue::Tuple(parts)` holds such parts. Copying them to the CPU once per
//! evaluation batch waits for the device; the module loaded onto the CPU
//! gives CPU tensors, whose copies wait for nothing: the arms that panic
//! yield no value, so they leave the match's value on the CPU.

use tch::{CModule, Device, IValue, Kind, Tensor};

fn outputs(output: IValue) -> (Tensor, Tensor) {
    let parts = match output {
        IValue::Tuple(parts) => parts,
        other => panic!("not a tuple: {other:?}"),
    };
    let value = match &parts[0] {
        IValue::Tensor(t) => t.shallow_clone(),
        other => panic!("not a tensor: {other:?}"),
    };
    let policy = match &parts[1] {
        IValue::Tensor(t) => t.shallow_clone(),
        other => panic!("not a tensor: {other:?}"),
    };
    (value, policy)
}

fn main() {
    let device = Device::cuda_if_available();
    let net = CModule::load_on_device("net.pt", device).unwrap();
    for _ in 0..1000 {
        let board = Tensor::zeros([64, 21, 8, 8], (Kind::Float, device));
        let output = net.forward_is(&[IValue::Tensor(board)]).unwrap();
        let (value, policy) = match output {
            IValue::Tuple(parts) => match (&parts[0], &parts[1]) {
                (IValue::Tensor(v), IValue::Tensor(p)) => (v.shallow_clone(), p.shallow_clone()),
                _ => panic!("unexpected output"),
            },
            _ => panic!("unexpected output"),
        };
        let value = value.to(Device::Cpu); //~ warning host-sync
        let policy = policy.to(Device::Cpu); //~ warning host-sync
        println!("{} {}", value.size()[0], policy.size()[0]);
    }
    let cpu_net = CModule::load_on_device("net.pt", Device::Cpu).unwrap();
    for _ in 0..1000 {
        let board = Tensor::zeros([64, 21, 8, 8], (Kind::Float, Device::Cpu));
        let (value, policy) = outputs(cpu_net.forward_is(&[IValue::Tensor(board)]).unwrap());
        let value = value.to(Device::Cpu);
        let policy = policy.to(Device::Cpu);
        println!("{} {}", value.size()[0], policy.size()[0]);
    }
}
