use tch::{CModule, Device, IValue, Tensor};

pub fn predict(model: &CModule, state: &[f32]) -> (Vec<f32>, f32) {
    let device = if tch::Cuda::is_available() { Device::Cuda(0) } else { Device::Cpu };
    let input = Tensor::from_slice(state).to_device(device).unsqueeze(0);
    let (policy, value) = match model.forward_is(&[IValue::Tensor(input)]).unwrap() {
        IValue::Tuple(out) => match (&out[0], &out[1]) {
            (IValue::Tensor(p), IValue::Tensor(v)) => (p.shallow_clone(), v.shallow_clone()),
            _ => panic!("expected two tensors"),
        },
        _ => panic!("expected a tuple"),
    };
    let policy = Vec::<f32>::try_from(policy.flatten(0, -1)).unwrap(); //~ warning host-sync
    let value = f32::try_from(value.flatten(0, -1)).unwrap(); //~ warning host-sync
    (policy, value)
}

pub fn search(model: &CModule, state: &[f32], simulations: usize) -> Vec<f32> {
    let mut visits = vec![0.0; 9];
    for _ in 0..simulations {
        let (policy, value) = predict(model, state); //~ warning host-sync
        for (v, p) in visits.iter_mut().zip(policy) {
            *v += p * value;
        }
    }
    visits
}
