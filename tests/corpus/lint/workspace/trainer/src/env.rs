use tch::Tensor;

pub struct Step {
    pub reward: Tensor,
    pub done: Tensor,
}

pub struct Env {
    pub rewards: Vec<f32>,
}

impl Env {
    pub fn step(&mut self, actions: Vec<i64>) -> Step {
        let done: Vec<f32> = actions.iter().map(|&a| (a == 0) as i32 as f32).collect();
        Step {
            reward: Tensor::from_slice(&self.rewards),
            done: Tensor::from_slice(&done),
        }
    }
}
