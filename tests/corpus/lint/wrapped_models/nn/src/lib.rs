//! A TorchScript model that hands its outputs back on the CPU: each
//! forward waits for the device twice.

use tch::{CModule, Device, IValue, Tensor};

pub struct NnModel {
    module: CModule,
    device: Device,
}

impl NnModel {
    pub fn load(path: &str, device: Device) -> tch::Result<NnModel> {
        let module = CModule::load_on_device(path, device)?;
        Ok(NnModel { module, device })
    }

    pub fn forward(&self, x: &Tensor) -> tch::Result<(Tensor, Tensor)> {
        let input = IValue::Tensor(x.to_device(self.device));
        match self.module.forward_is(&[input])? {
            IValue::Tuple(mut outputs) if outputs.len() == 2 => {
                let value = tensor_of(outputs.pop().unwrap())?;
                let policy = tensor_of(outputs.pop().unwrap())?;
                let policy = policy.to_device(Device::Cpu); //~ warning host-sync
                let value = value.to_device(Device::Cpu); //~ warning host-sync
                Ok((policy, value))
            }
            _ => Err(tch::TchError::Kind("expected two outputs".into())),
        }
    }
}

fn tensor_of(value: IValue) -> tch::Result<Tensor> {
    match value {
        IValue::Tensor(t) => Ok(t),
        _ => Err(tch::TchError::Kind("expected a tensor".into())),
    }
}
