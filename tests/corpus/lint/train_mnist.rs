//! An MNIST classifier trained the usual way: an epoch loop around a
//! mini-batch loop, with logging inside the hot loop.

use anyhow::Result;
use tch::{nn, nn::ModuleT, nn::OptimizerConfig, Device, Kind, Tensor};

const LOG_EVERY: usize = 100;

fn net(vs: &nn::Path) -> impl ModuleT {
    nn::seq_t()
        .add(nn::linear(vs / "fc1", 784, 128, Default::default()))
        .add_fn(|xs| xs.relu())
        .add_fn_t(|xs, train| xs.dropout(0.2, train))
        .add(nn::linear(vs / "fc2", 128, 10, Default::default()))
}

fn main() -> Result<()> {
    let device = Device::cuda_if_available();
    let data = tch::vision::mnist::load_dir("data")?;
    let vs = nn::VarStore::new(device);
    let model = net(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 1e-3)?;
    let mut history: Vec<f64> = Vec::new();

    for epoch in 1..=10 {
        let mut running = 0.0;
        let mut seen = 0i64;
        for (step, (images, labels)) in data.train_iter(128).shuffle().to_device(device).enumerate() {
            let logits = model.forward_t(&images, true);
            let loss = logits.cross_entropy_for_logits(&labels);
            opt.backward_step(&loss);
            running += loss.double_value(&[]); //~ warning host-sync
            // Metadata lives on the host: no sync.
            seen += images.size()[0];
            let batch_label = seen.to_string();
            if step % LOG_EVERY == 0 {
                println!("epoch {epoch} step {step} loss {}", f64::try_from(&loss)?); //~ note host-sync
            }
            let _ = batch_label;
        }
        // The once-per-epoch evaluation reads once per test mini-batch in
        // tch's own evaluation loop: the once-per-epoch level, a note.
        let test_accuracy = model.batch_accuracy_for_logits(&data.test_images, &data.test_labels, device, 1024); //~ note syncing-helper
        history.push(running / seen as f64);
        println!("epoch {epoch:3} loss {:.4} test acc {:5.2}%", running / seen as f64, 100. * test_accuracy);
    }

    // After training, reads cost nothing worth reporting.
    let weights = vs.root().get("fc1.weight").unwrap();
    println!("final weight norm {}", weights.norm());
    println!("history {:?}", history);
    Ok(())
}

fn train_clipped(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &tch::vision::dataset::Dataset, device: Device) {
    for (xs, ys) in data.train_iter(64).to_device(device) {
        let loss = model.forward_t(&xs, true).cross_entropy_for_logits(&ys);
        opt.backward_step_clip_norm(&loss, 1.0); //~ warning syncing-helper
        println!("loss {}", loss); //~ warning host-sync
        // Debug of a batch prints only its shape and kind.
        println!("batch {:?}", xs);
        // ...but tch prints the value of a 0-dim tensor, such as a loss.
        println!("loss {:?}", loss); //~ warning host-sync
        loss.print(); //~ warning host-sync
        let (shape, count, kind, placement, rank) = (xs.size(), xs.numel(), xs.kind(), xs.device(), xs.dim());
        let _ = (shape, count, kind, placement, rank);
    }
}

fn train_manual_clip(model: &impl ModuleT, opt: &mut nn::Optimizer, batches: &[(Tensor, Tensor)]) {
    for (xs, ys) in batches {
        let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
        opt.zero_grad();
        loss.backward();
        opt.clip_grad_norm(0.5); //~ warning syncing-helper
        opt.step();
        // devcheck: allow(host-sync)
        let logged = loss.double_value(&[]);
        let also_logged = f64::try_from(&loss).unwrap(); // devcheck: allow(host-sync)
        let _ = (logged, also_logged, Kind::Float);
    }
}

/// Outside any loop, the helper's reads run once per evaluation: nothing
/// to report.
pub fn evaluate_once(model: &impl ModuleT, data: &tch::vision::dataset::Dataset, device: Device) -> f64 {
    model.batch_accuracy_for_logits(&data.test_images, &data.test_labels, device, 1024)
}
