//! Advanced indexing takes its indices on the CPU whatever the device of
//! the tensor it indexes: an embedding table on the device looked up with
//! a context built from a host slice gives a device result, so the sampled
//! token read each time round the generation loop waits for the device.
//! An operation that needs both operands on one device (`matmul` of a CPU
//! tensor) still runs where the CPU operand forces it.

use tch::{Device, IndexOp, Kind, Tensor};

pub fn sample(device: Device, tokens: usize) -> Vec<i64> {
    let table = Tensor::randn([27, 10], (Kind::Float, device));
    let head = Tensor::randn([30, 27], (Kind::Float, device));
    let mut context = Tensor::from_slice(&[0i64; 3]);
    let mut out = Vec::new();
    for _ in 0..tokens {
        let emb = table.index(&[Some(context.shallow_clone())]);
        let logits = emb.view([1, -1]).matmul(&head);
        let probs = logits.softmax(1, Kind::Float);
        let ix = i64::try_from(probs.multinomial(1, true)).unwrap(); //~ warning host-sync
        context = Tensor::cat(&[context.i(1..), Tensor::from_slice(&[ix])], 0);
        out.push(ix);
    }
    out
}

fn main() {
    let tokens = sample(Device::cuda_if_available(), 20);
    let host = Tensor::from_slice(&[1.0f32, 2.0]);
    for _ in 0..tokens.len() {
        let mixed = host.matmul(&Tensor::ones([2], (Kind::Float, Device::cuda_if_available())));
        println!("{}", f64::try_from(mixed).unwrap());
    }
}
