//! SGD and Adam with the update rules of `torch.optim`, written over tch tensors
//! so that their state is visible to the placement check (tch's `nn::Optimizer`
//! keeps its state inside C++, out of reach).

use tch::{no_grad, Kind, TchError, Tensor};

/// An optimizer whose state tensors can be inspected.
pub trait Optimizer {
    /// Clears the gradients of every parameter.
    fn zero_grad(&mut self);
    /// Applies one update from the current gradients.
    fn step(&mut self) -> Result<(), TchError>;
    /// Named state tensors (momentum buffers, moment estimates).
    fn state(&self) -> Vec<(String, Tensor)>;
}

fn zero_grads(params: &[(String, Tensor)]) {
    for (_, param) in params {
        let mut grad = param.grad();
        if grad.defined() {
            let _ = grad.detach_().zero_();
        }
    }
}

/// Stochastic gradient descent with optional momentum (`torch.optim.SGD`).
pub struct Sgd {
    params: Vec<(String, Tensor)>,
    lr: f64,
    momentum: f64,
    buffers: Vec<Option<Tensor>>,
}

impl Sgd {
    /// SGD over named parameters (from `VarStore::variables`).
    pub fn new(params: Vec<(String, Tensor)>, lr: f64, momentum: f64) -> Self {
        let buffers = params.iter().map(|_| None).collect();
        Self {
            params,
            lr,
            momentum,
            buffers,
        }
    }
}

impl Optimizer for Sgd {
    fn zero_grad(&mut self) {
        zero_grads(&self.params);
    }

    fn step(&mut self) -> Result<(), TchError> {
        no_grad(|| {
            for ((_, param), buffer) in self.params.iter_mut().zip(&mut self.buffers) {
                let grad = param.grad();
                if !grad.defined() {
                    continue;
                }
                let direction = if self.momentum != 0.0 {
                    let updated = match buffer.take() {
                        None => grad.f_detach_copy()?,
                        Some(previous) => previous.f_mul_scalar(self.momentum)?.f_add(&grad)?,
                    };
                    *buffer = Some(updated.shallow_clone());
                    updated
                } else {
                    grad
                };
                let _ = param.f_sub_(&direction.f_mul_scalar(self.lr)?)?;
            }
            Ok(())
        })
    }

    fn state(&self) -> Vec<(String, Tensor)> {
        self.params
            .iter()
            .zip(&self.buffers)
            .filter_map(|((name, _), buffer)| {
                Some((
                    format!("{name}.momentum_buffer"),
                    buffer.as_ref()?.shallow_clone(),
                ))
            })
            .collect()
    }
}

/// Adam (`torch.optim.Adam`, without weight decay or amsgrad).
pub struct Adam {
    params: Vec<(String, Tensor)>,
    lr: f64,
    betas: (f64, f64),
    eps: f64,
    steps: i32,
    moments: Vec<Option<(Tensor, Tensor)>>,
}

impl Adam {
    /// Adam over named parameters, with torch's defaults for betas and eps.
    pub fn new(params: Vec<(String, Tensor)>, lr: f64) -> Self {
        let moments = params.iter().map(|_| None).collect();
        Self {
            params,
            lr,
            betas: (0.9, 0.999),
            eps: 1e-8,
            steps: 0,
            moments,
        }
    }
}

impl Optimizer for Adam {
    fn zero_grad(&mut self) {
        zero_grads(&self.params);
    }

    fn step(&mut self) -> Result<(), TchError> {
        self.steps += 1;
        let (beta1, beta2) = self.betas;
        let correction1 = 1.0 - beta1.powi(self.steps);
        let correction2 = 1.0 - beta2.powi(self.steps);
        no_grad(|| {
            for ((_, param), moments) in self.params.iter_mut().zip(&mut self.moments) {
                let grad = param.grad();
                if !grad.defined() {
                    continue;
                }
                let (exp_avg, exp_avg_sq) =
                    moments.get_or_insert_with(|| (param.zeros_like(), param.zeros_like()));
                let _ = exp_avg.f_lerp_(&grad, 1.0 - beta1)?;
                let _ = exp_avg_sq
                    .f_mul_scalar_(beta2)?
                    .f_addcmul_(&grad, &grad.f_mul_scalar(1.0 - beta2)?)?;
                let denom = exp_avg_sq
                    .f_sqrt()?
                    .f_div_scalar(correction2.sqrt())?
                    .f_add_scalar(self.eps)?;
                let _ = param.f_addcdiv_(&exp_avg.f_mul_scalar(-self.lr / correction1)?, &denom)?;
            }
            Ok(())
        })
    }

    fn state(&self) -> Vec<(String, Tensor)> {
        self.params
            .iter()
            .zip(&self.moments)
            .flat_map(|((name, _), moments)| match moments {
                Some((exp_avg, exp_avg_sq)) => vec![
                    (format!("{name}.exp_avg"), exp_avg.shallow_clone()),
                    (format!("{name}.exp_avg_sq"), exp_avg_sq.shallow_clone()),
                ],
                None => Vec::new(),
            })
            .collect()
    }
}

/// Named trainable parameters of a var store, sorted by name for a stable order.
pub fn named_parameters(vs: &tch::nn::VarStore) -> Vec<(String, Tensor)> {
    let mut params: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .filter(|(_, t)| t.requires_grad() && t.kind().is_float())
        .collect();
    params.sort_by(|a, b| a.0.cmp(&b.0));
    params
}

trait KindExt {
    fn is_float(&self) -> bool;
}

impl KindExt for Kind {
    fn is_float(&self) -> bool {
        matches!(
            self,
            Kind::Half | Kind::BFloat16 | Kind::Float | Kind::Double
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    fn param(values: &[f64]) -> Tensor {
        Tensor::from_slice(values).set_requires_grad(true)
    }

    #[test]
    fn sgd_with_momentum_matches_torch_optim() {
        // torch.optim.SGD([p], lr=0.1, momentum=0.9), loss = sum(p^2), two steps:
        // p = [1, -2] -> [0.8, -1.6] -> [0.46, -0.92]
        let p = param(&[1.0, -2.0]);
        let mut sgd = Sgd::new(vec![("p".into(), p.shallow_clone())], 0.1, 0.9);
        for _ in 0..2 {
            sgd.zero_grad();
            (&p * &p).sum(Kind::Double).backward();
            sgd.step().unwrap();
        }
        let values = Vec::<f64>::try_from(&p.detach()).unwrap();
        assert!(
            (values[0] - 0.46).abs() < 1e-12 && (values[1] + 0.92).abs() < 1e-12,
            "{values:?}"
        );
        assert_eq!(sgd.state()[0].0, "p.momentum_buffer");
    }

    #[test]
    fn adam_first_step_moves_each_parameter_by_lr() {
        // Adam's first update is lr * g / (|g| + eps): a step of lr against the gradient's sign.
        let p = param(&[1.0, -2.0, 0.5]);
        let mut adam = Adam::new(vec![("p".into(), p.shallow_clone())], 0.01);
        adam.zero_grad();
        (&p * &p).sum(Kind::Double).backward();
        adam.step().unwrap();
        let values = Vec::<f64>::try_from(&p.detach()).unwrap();
        for (after, before) in values.iter().zip([1.0, -2.0, 0.5]) {
            assert!(
                (after - (before - 0.01 * f64::signum(before))).abs() < 1e-9,
                "{values:?}"
            );
        }
        let state = adam.state();
        assert_eq!(state.len(), 2);
        assert!(state
            .iter()
            .all(|(_, t)| t.device() == Device::Cpu && t.kind() == Kind::Double));
    }
}
