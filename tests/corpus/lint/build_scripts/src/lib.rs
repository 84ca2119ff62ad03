use tch::Tensor;

/// Euler steps of `dy/dt = f(t, y)`, on the device `y0` lives on.
pub fn euler(f: impl Fn(f64, &Tensor) -> Tensor, y0: &Tensor, h: f64, steps: usize) -> Tensor {
    let mut y = y0.shallow_clone();
    for i in 0..steps {
        let t = i as f64 * h;
        y = &y + f(t, &y) * h;
        if y.isfinite().all().int64_value(&[]) == 0 { //~ warning host-sync
            panic!("the solution left the finite numbers at step {i}");
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use tch::{Device, Kind, Tensor};

    #[test]
    fn decays() {
        let y0 = Tensor::ones([2], (Kind::Float, Device::Cpu));
        let y = super::euler(|_, y| -y, &y0, 0.01, 100);
        assert!(y.max().double_value(&[]) < 1.0);
    }
}
