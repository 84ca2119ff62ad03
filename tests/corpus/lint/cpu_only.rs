//! Code that looks like it syncs but does not: CPU tensors, metadata,
//! strings and numbers, Debug output, and reads outside loops.

use itertools::Itertools;
use tch::{kind, Device, Kind, Tensor};

const CPU_OPTIONS: (Kind, Device) = (Kind::Float, Device::Cpu);

pub struct Stats {
    pub count: usize,
    pub name: String,
}

impl Stats {
    fn equal(&self, other: &Stats) -> bool {
        self.count == other.count
    }
}

pub fn preprocess(rows: &[Vec<f32>]) -> Vec<f64> {
    let device = Device::Cpu;
    let mut means = Vec::new();
    for row in rows {
        let host = Tensor::from_slice(row);
        means.push(host.mean(Kind::Float).double_value(&[]));
        let zeros = Tensor::zeros([3], CPU_OPTIONS);
        let ones = Tensor::ones([3], kind::FLOAT_CPU);
        let sum = &zeros + &ones;
        println!("{}", sum);
        let values = Vec::<f32>::try_from(&sum).unwrap();
        let scaled = host.to_device(device) * 2.0;
        let first = f64::try_from(scaled.get(0)).unwrap();
        let masked = host.masked_select(&host.gt(0.0));
        let _ = (values, first, masked);
    }
    means
}

pub fn describe(batches: &[Tensor], names: &[String], device: Device) {
    let total = Tensor::zeros([], (Kind::Float, device));
    for (i, batch) in batches.iter().enumerate() {
        // Metadata never syncs.
        let rows = batch.size()[0];
        let n = batch.numel();
        let k = batch.kind();
        let d = batch.device();
        let r = batch.dim();
        // Numbers and strings have to_string and Display too.
        let label = i.to_string();
        let name = names[i].to_string();
        println!("{} {} {} {:?} {:?} {}", label, name, rows, k, d, r + n as usize);
        // Debug of a batch prints its shape, not its data.
        println!("{:?}", batch);
        let a = Stats { count: rows as usize, name: name.clone() };
        let b = Stats { count: n as usize, name };
        if a.equal(&b) {
            println!("{} equal", a.name);
        }
        let distinct: Vec<usize> = names.iter().map(|n| n.len()).unique().collect();
        let _ = distinct;
    }
    // Outside any loop: reading is fine.
    println!("total {}", total);
    let value = total.double_value(&[]);
    let _ = value;
}
