//! An evaluator copies a batch's value and policy to the CPU and hands each
//! search its pair in a packet (`Reply { outputs: (value, policy), .. }`,
//! inside an enum variant): a tuple of two CPU tensors is CPU data as a
//! whole, and so is `reply.outputs.0` wherever the packet goes. The copies
//! are the syncs, once per simulation here; expanding the node from the
//! packet waits for no device.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Reply {
    pub outputs: (Tensor, Tensor),
    pub id: usize,
}

pub enum Message {
    Evaluated(Result<Reply, String>),
}

fn evaluate(net: &nn::Sequential, boards: &Tensor) -> (Tensor, Tensor) {
    let out = net.forward(boards);
    let value = out.sum_dim_intlist([1i64].as_slice(), false, Kind::Float).to(Device::Cpu); //~ warning host-sync
    let policy = out.softmax(-1, Kind::Float).to(Device::Cpu); //~ warning host-sync
    (value, policy)
}

fn answer(net: &nn::Sequential, boards: &Tensor, id: usize) -> Message {
    let (value, policy) = evaluate(net, boards); //~ warning host-sync
    let reply = Reply { outputs: (value.get(0), policy.get(0)), id };
    Message::Evaluated(Ok(reply))
}

fn expand(outputs: (&Tensor, &Tensor)) -> f32 {
    let (value, policy) = outputs;
    let priors: Vec<f32> = Vec::try_from(policy).unwrap();
    f32::try_from(value).unwrap() + priors[0]
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 8, Default::default()));
    let boards = Tensor::zeros([16, 8], (Kind::Float, device));
    let mut total = 0.0;
    for simulation in 0..800 {
        let reply = match answer(&net, &boards, simulation) { //~ warning host-sync
            Message::Evaluated(Ok(reply)) => reply,
            Message::Evaluated(Err(e)) => panic!("{e}"),
        };
        total += expand((&reply.outputs.0, &reply.outputs.1));
    }
    println!("{total}");
}

/// A shape check that returns an error in its last arm still hands back
/// the CPU copy it made: the error carries no tensor.
fn to_host(output: Tensor) -> Result<Tensor, String> {
    let output = output.to_device(Device::Cpu); //~ warning host-sync
    let shape = output.size();
    let output = match shape.as_slice() {
        [1, _, _] => output.squeeze_dim(0),
        [_, _] => output,
        _ => return Err(format!("unexpected shape {shape:?}")),
    };
    Ok(output)
}

pub fn write_chunks(chunks: &[Tensor], take: usize) -> Result<Vec<f32>, String> {
    let mut samples = Vec::new();
    for chunk in chunks {
        let output = to_host(chunk.to_device(Device::cuda_if_available()) * 2.0)?; //~ warning host-sync
        let mut left = vec![0.0_f32; take];
        output.get(0).copy_data(&mut left, take);
        samples.extend(left);
    }
    Ok(samples)
}
