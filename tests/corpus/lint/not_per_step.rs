//! Reads in loops that are not a step's: host data going into tensors,
//! serialising each tensor, handing each input to another runtime,
//! answering each request, and periodic guards written other ways.

use std::collections::HashMap;
use std::sync::mpsc::Receiver;

use ndarray::ArrayD;
use safetensors::tensor::TensorView;
use tch::{Kind, Tensor};

/// Host data into tensors: `TensorView` converts to a `Tensor`, not back.
pub fn load(views: Vec<(String, TensorView<'_>)>) -> HashMap<String, Tensor> {
    let mut tensors = HashMap::new();
    for (name, view) in views {
        let tensor: Tensor = view.try_into().unwrap();
        tensors.insert(name, tensor);
    }
    tensors
}

/// One copy per tensor is the point of saving a checkpoint.
pub fn serialise(tensors: &[(String, Tensor)]) -> Vec<(String, Vec<f32>)> {
    tensors
        .iter()
        .map(|(name, tensor)| (name.clone(), Vec::<f32>::try_from(tensor).unwrap())) //~ note host-sync
        .collect()
}

/// Each input of one call into another runtime is copied once.
pub fn to_runtime(inputs: &HashMap<&str, Tensor>, names: &[&str]) -> Vec<ArrayD<i64>> {
    names
        .iter()
        .map(|name| {
            let array: ArrayD<i64> = (&inputs[name]).try_into().unwrap(); //~ note host-sync
            array
        })
        .collect()
}

/// A server loop: each request's answer has to come back to the host.
pub fn serve(requests: Receiver<Tensor>, model: &impl Fn(&Tensor) -> Tensor) {
    while let Ok(request) = requests.recv() {
        let answer = model(&request);
        println!("{}", answer.argmax(-1, false)); //~ note host-sync
    }
}

/// A worker whose `loop` begins by taking the next message: one iteration
/// per message, as `while let Ok(..) = recv()` is, and so is a function it
/// calls.
pub fn log_worker(messages: Receiver<Tensor>) {
    loop {
        let loss = match messages.recv() {
            Ok(loss) => loss,
            Err(_) => break,
        };
        log_loss(&loss); //~ note host-sync
    }
}

fn log_loss(loss: &Tensor) {
    println!("loss {}", f64::try_from(loss).unwrap());
}

/// `every` is an optional period: the read runs every `n` steps.
pub fn train(batches: &[Tensor], every: Option<usize>) {
    for (step, batch) in batches.iter().enumerate() {
        let loss = batch.mean(Kind::Float);
        if let Some(0) = every.map(|n| step % n) {
            println!("step {step} loss {}", f64::try_from(&loss).unwrap()); //~ note host-sync
        }
    }
}

/// Every `k` steps but the first, and once more at the last step: each
/// branch of the `||` runs on few steps, so the read is not per step.
pub fn train_and_log_last(
    batches: &[Tensor],
    opt: &mut tch::nn::Optimizer,
    k: usize,
) -> tch::Result<()> {
    let n_steps = batches.len();
    for (i, batch) in batches.iter().enumerate() {
        let loss = batch.square().mean(Kind::Float);
        opt.backward_step(&loss);
        if (i % k == 0 && i != 0) || i == n_steps - 1 {
            let l = f64::try_from(&loss)?; //~ note host-sync
            println!("step {i} loss {l}");
        }
        // A branch that holds on most steps makes the guard no guard.
        if i % k == 0 || i > 10 {
            let l = f64::try_from(&loss)?; //~ warning host-sync
            println!("step {i} loss {l}");
        }
    }
    Ok(())
}
