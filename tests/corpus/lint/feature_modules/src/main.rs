//! A trainer with a CUDA-only backend and tests in modules of their own.

#[cfg(feature = "cuda")]
mod cuda_backend;
#[cfg(test)] mod tests;
mod train;

fn main() {
    let device = tch::Device::cuda_if_available();
    train::train(device, 100);
}
