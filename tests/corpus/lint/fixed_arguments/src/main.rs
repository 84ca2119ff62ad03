use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

struct Pool {
    device: Device,
}

impl Pool {
    /// Every call passes `false`: the diagnostics never run.
    fn utility(&self, returns: &Tensor, debug: bool) -> Tensor {
        let dump = if debug {
            |name: &str, t: &Tensor| {
                let nans = t.isnan().sum(Kind::Int64).double_value(&[]);
                println!("{name}: {nans} NaN");
            }
        } else {
            |_: &str, _: &Tensor| {}
        };
        let mean = returns.mean(Kind::Float);
        dump("mean", &mean);
        mean.to_device(self.device)
    }
}

/// Every call passes `true`: the summary in the `else` never runs.
fn penalty(xs: &Tensor, quiet: bool) -> Tensor {
    let penalty = xs.square().mean(Kind::Float);
    if !quiet {
        println!("penalty {:.4}", penalty.double_value(&[]));
    }
    penalty
}

/// One call passes `true`, another `false`: the read runs.
fn clipped(xs: &Tensor, log: bool) -> Tensor {
    let out = xs.clamp(-1.0, 1.0);
    if log {
        println!("max {}", out.max().double_value(&[])); //~ warning host-sync
    }
    out
}

/// The flag comes from the command line: the read may run.
fn scaled(xs: &Tensor, verbose: bool) -> Tensor {
    let out = xs * 0.5;
    if verbose {
        println!("scaled {}", out.mean(Kind::Float).double_value(&[])); //~ warning host-sync
    }
    out
}

fn main() {
    let verbose = std::env::args().any(|a| a == "--verbose");
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 16, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let pool = Pool { device };
    let show_debug = false;
    for _ in 0..1000 {
        let xs = Tensor::randn([64, 16], (Kind::Float, device));
        let out = net.forward(&xs);
        let reward = pool.utility(&out, show_debug); //~ note host-sync
        let extra = penalty(&out, true); //~ note host-sync
        let kept = clipped(&out, false); //~ warning host-sync
        let half = scaled(&kept, verbose); //~ warning host-sync
        let loss = half.mean(Kind::Float) - reward + extra;
        opt.backward_step(&loss);
    }
    let probe = Tensor::ones([4, 16], (Kind::Float, device));
    let _ = pool.utility(&probe, false);
    let _ = clipped(&probe, true);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utility_reports() {
        let pool = Pool { device: Device::Cpu };
        let _ = pool.utility(&Tensor::ones([2], (Kind::Float, Device::Cpu)), true);
    }
}
