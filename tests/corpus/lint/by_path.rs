//! Two modules each define `train_step`: every call resolves to its own
//! module's function, never to a merge of both by bare name. A third one
//! does not read at all. A path that starts from another crate
//! (`geometry::area(&polygon)`) reaches none of the crate's functions, not
//! even one of the same name (`shapes::area`, which reads).

use tch::{nn, nn::ModuleT, Kind, Tensor};

mod classifier {
    use super::*;

    fn train_step(model: &impl ModuleT, opt: &mut nn::Optimizer, xs: &Tensor, ys: &Tensor) -> f64 {
        let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        f64::try_from(&loss).unwrap() //~ warning host-sync
    }

    pub fn run(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
        for (xs, ys) in data {
            let loss = train_step(model, opt, xs, ys); //~ warning host-sync
            let _ = loss;
        }
    }
}

mod regressor {
    use super::*;

    fn train_step(model: &impl ModuleT, opt: &mut nn::Optimizer, xs: &Tensor, ys: &Tensor) -> f64 {
        let loss = model.forward_t(xs, true).mse_loss(ys, tch::Reduction::Mean);
        opt.backward_step(&loss);
        loss.double_value(&[]) //~ warning host-sync
    }

    pub fn run(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
        for (xs, ys) in data {
            let loss = train_step(model, opt, xs, ys); //~ warning host-sync
            let _ = loss;
        }
    }
}

mod quiet {
    use super::*;

    fn train_step(model: &impl ModuleT, opt: &mut nn::Optimizer, xs: &Tensor, ys: &Tensor) -> Tensor {
        let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        loss.detach()
    }

    pub fn run(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) -> Tensor {
        let mut total = Tensor::zeros([], (Kind::Float, tch::Device::cuda_if_available()));
        for (xs, ys) in data {
            total += train_step(model, opt, xs, ys);
        }
        total
    }
}

mod shapes {
    use super::*;

    /// The mask's area, read back from the device.
    pub fn area(mask: &Tensor) -> f32 {
        f32::try_from(mask.sum(Kind::Float)).unwrap() //~ warning host-sync
    }

    pub fn measure(masks: &Tensor, polygons: &[Vec<(f32, f32)>]) -> Vec<(f32, f32)> {
        let mut out = Vec::new();
        for (i, polygon) in polygons.iter().enumerate() {
            let mask = masks.get(i as i64);
            let outline = geometry::area(polygon);
            out.push((outline, area(&mask))); //~ warning host-sync
        }
        out
    }
}
