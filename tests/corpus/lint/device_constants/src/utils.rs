use static_init::dynamic;
use tch::Device;

#[dynamic(lazy)]
pub static DEVICE: Device = Device::Cpu;

pub const GPU_DEVICE: Device = Device::Cuda(0);
