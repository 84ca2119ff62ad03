//! Branches taken only once a value has gone bad: diagnostics under
//! `is_nan()`, `is_infinite()` or `!is_finite()` run once something has
//! failed, like an error's message, not on every step. So do those under a
//! read of whether a tensor went bad (`bool::from(t.isnan().any())`,
//! `!bool::from(t.isfinite().all())`): the read itself waits on every step,
//! what the branch holds does not. A branch that also runs for ordinary
//! values stays per step.
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 8, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let xs = Tensor::randn([32, 8], (Kind::Float, device));
    for step in 0..1000 {
        let out = net.forward(&xs);
        let loss = out.mean(Kind::Float);
        let loss_val = loss.double_value(&[]); //~ warning host-sync
        if loss_val.is_nan() || loss_val.is_infinite() {
            let outputs: Vec<f32> = out.flatten(0, -1).try_into().unwrap();
            println!("step {step}: loss {loss_val}, outputs {outputs:?}");
            continue;
        }
        if step > 10 && !loss_val.is_finite() {
            println!("weights: {}", net.ws.abs().max().double_value(&[]));
            break;
        }
        if loss_val > 1e3 || loss_val.is_nan() {
            println!("large: {}", out.abs().max().double_value(&[])); //~ warning host-sync
        }
        if bool::from(out.isnan().any()) { //~ warning host-sync
            eprintln!("NaN output, input sum {}", f32::from(xs.sum(Kind::Float)));
            continue;
        }
        if !bool::from(out.isfinite().all()) { //~ warning host-sync
            eprintln!("non-finite output, max {}", f32::from(out.abs().max()));
            break;
        }
        if out.isinf().any().int64_value(&[]) != 0 { //~ warning host-sync
            eprintln!("inf output, mean {}", f32::from(out.mean(Kind::Float)));
            break;
        }
        if bool::from(out.gt(10.0).any()) { //~ warning host-sync
            eprintln!("large output, max {}", f32::from(out.max())); //~ warning host-sync
        }
        opt.backward_step(&loss);
    }
}
