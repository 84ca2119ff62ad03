//! An auto-labelling tool with an optional tch backend.

#[cfg(feature = "torch")]
use tch::{Device, Tensor};

enum Backend {
    None,
    #[cfg(feature = "torch")]
    Torch,
}

fn main() {
    let backend = Backend::None;
    match backend {
        Backend::None => {}
        #[cfg(feature = "torch")]
        Backend::Torch => {
            let device = Device::cuda_if_available();
            let model = tch::CModule::load_on_device("model.pt", device).unwrap();
            let images: Vec<Tensor> = Vec::new();
            for image in &images {
                let scores = model.forward_ts(&[image.to_device(device)]).unwrap();
                println!("{}", i64::try_from(scores.argmax(-1, false)).unwrap()); //~ warning host-sync
                #[cfg(feature = "profiling")]
                println!("{}", f64::try_from(scores.max()).unwrap()); //~ note host-sync
            }
        }
    }
}
