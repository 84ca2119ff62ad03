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
