//! What tch reads from files is host data until it is moved: its tensor
//! readers (`Tensor::load`, `read_npy`, `read_npz`, `load_multi`,
//! `read_safetensors`, ...) and its dataset and image loaders
//! (`vision::mnist::load_dir`, `imagenet::load_image_and_resize224`). Reads
//! of it wait for nothing; reads of what was moved to a device do.

use tch::{Device, Kind, Tensor};

pub fn checkpoint_statistics(path: &str) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for (_name, tensor) in &Tensor::read_npz(path)? {
        total += tensor.mean(Kind::Float).double_value(&[]);
    }
    let loaded = Tensor::load(path)?;
    for i in 0..10 {
        total += loaded.double_value(&[i]);
    }
    for (_name, tensor) in Tensor::load_multi(path)?.iter() {
        total += f64::try_from(tensor.sum(Kind::Float))?;
    }
    let named = Tensor::read_safetensors(path)?;
    for (_name, tensor) in named.into_iter() {
        total += f64::try_from(tensor.sum(Kind::Float))?;
    }
    Ok(total)
}

/// An optional file read as `Some` on success and `None` otherwise holds
/// what was read, where it was read.
pub fn optional_boosts(path: &str, n: i64) -> f64 {
    let boosts = match Tensor::load(path) {
        Ok(tensor) => Some(tensor),
        Err(e) => {
            eprintln!("no boosts: {e}");
            None
        }
    };
    let mut total = 0.0;
    for i in 0..n {
        if let Some(ref b) = boosts {
            total += b.get(i).double_value(&[]);
        }
    }
    total
}

/// A reader given the CPU as its device reads onto the CPU, whatever the
/// stream before it is.
pub fn uploaded_limits(uploads: Vec<Vec<u8>>) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for upload in uploads {
        let stream = std::io::Cursor::new(upload);
        for (_name, tensor) in Tensor::load_multi_from_stream_with_device(stream, Device::Cpu)? {
            total += tensor.double_value(&[]);
        }
    }
    Ok(total)
}

pub fn moved_to_a_device(path: &str, device: Device) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for (_name, tensor) in &Tensor::read_npz(path)? {
        let moved = tensor.to_device(device);
        total += moved.mean(Kind::Float).double_value(&[]); //~ warning host-sync
    }
    let loaded = Tensor::load(path)?.to_device(device);
    for i in 0..10 {
        total += loaded.double_value(&[i]); //~ warning host-sync
    }
    // Read straight onto the device.
    for (_name, tensor) in Tensor::load_multi_with_device(path, device)? {
        total += f64::try_from(tensor.sum(Kind::Float))?; //~ warning host-sync
    }
    Ok(total)
}

pub fn datasets(device: Device) -> f64 {
    let mnist = tch::vision::mnist::load_dir("data").unwrap();
    let image = tch::vision::imagenet::load_image_and_resize224("cat.jpg").unwrap();
    let mut total = 0.0;
    for i in 0..10 {
        total += mnist.train_images.get(i).sum(Kind::Float).double_value(&[]);
        total += image.get(0).get(i).double_value(&[0]);
        let moved = image.to_device(device);
        total += moved.get(0).get(i).double_value(&[0]); //~ warning host-sync
    }
    total
}
