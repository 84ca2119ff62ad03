//! Evaluation of a classifier: the per-batch bookkeeping that quietly
//! copies predictions back to the host.

use std::fmt::Write as _;

use log::info;
use ndarray::ArrayD;
use tch::{data::Iter2, nn::ModuleT, Device, Kind, Tensor};

pub fn evaluate(model: &impl ModuleT, images: &Tensor, labels: &Tensor, device: Device) -> anyhow::Result<f64> {
    let mut correct = 0i64;
    let mut report = String::new();
    let mut previous = Tensor::zeros([10], (Kind::Float, device));
    for (xs, ys) in Iter2::new(images, labels, 256).to_device(device) {
        let logits = model.forward_t(&xs, false);
        let predictions = logits.argmax(-1, false);
        correct += predictions.eq_tensor(&ys).sum(Kind::Int64).int64_value(&[]); //~ warning host-sync
        let predicted = Vec::<i64>::try_from(&predictions)?; //~ warning host-sync
        let probabilities = logits.softmax(-1, Kind::Float).to_device(Device::Cpu); //~ warning host-sync
        // Once on the CPU, reading the copy does not wait for the device.
        let top = probabilities.double_value(&[0, 0]);
        let scores = ArrayD::<f32>::try_from(&probabilities)?;
        let logits_host: ArrayD<f32> = (&logits).try_into()?; //~ warning host-sync
        writeln!(report, "batch: {} predicted {:?} top {top}", predictions, predicted)?; //~ warning host-sync
        if logits.allclose(&previous, 1e-5, 1e-8, false) { //~ warning host-value-op
            info!("logits did not change");
        }
        if ys.equal(&predictions) { //~ warning host-value-op
            info!("perfect batch");
        }
        info!("batch accuracy {}", predictions.eq_tensor(&ys).to_kind(Kind::Float).mean(Kind::Float)); //~ warning host-sync
        tracing::debug!(accuracy = %predictions.eq_tensor(&ys).to_kind(Kind::Float).mean(Kind::Float), "batch done"); //~ note host-sync
        // Debug of metadata reads nothing.
        tracing::debug!(shape = ?logits.size(), "logits");
        let legacy = f64::from(&logits.mean(Kind::Float)); //~ warning host-sync
        let mut buffer = vec![0f32; 10];
        logits.copy_data(&mut buffer, 10); //~ warning host-sync
        let rows: Vec<i64> = ys.to(Device::Cpu).try_into()?; //~ warning host-sync
        previous = logits.mean_dim(0, false, Kind::Float);
        let _ = (scores, logits_host, legacy, rows);
    }
    Ok(correct as f64 / images.size()[0] as f64)
}

/// Walking a tensor element by element reads once per element.
pub fn histogram(predictions: &Tensor) -> anyhow::Result<[u64; 10]> {
    let mut counts = [0u64; 10];
    for class in predictions.iter::<i64>()? { //~ warning host-sync
        counts[class as usize] += 1;
    }
    Ok(counts)
}

pub fn log_batches(batches: &[Tensor]) -> String {
    let mut out = String::new();
    for (index, batch) in batches.iter().enumerate() {
        let line = format!("{index}: {batch}"); //~ warning host-sync
        out.push_str(&line);
        let label = batch.to_string(); //~ warning host-sync
        let index_label = index.to_string();
        let _ = (label, index_label);
    }
    out
}
