use tch::{nn, nn::Module, Device, Kind, Tensor};

pub fn profile(net: &nn::Linear, batches: &[Tensor]) {
    for batch in batches {
        let out = net.forward(&batch.to_device(Device::Cuda(0)));
        println!("{}", out.mean(Kind::Float).double_value(&[])); //~ note host-sync
    }
}
