use crate::model::Policy;

pub trait Handler {
    fn on_tick(&mut self, price: f32) -> i64;
}

pub struct Bot {
    pub policy: Policy,
    pub window: Vec<f32>,
}

impl Handler for Bot {
    fn on_tick(&mut self, price: f32) -> i64 {
        self.window.push(price);
        if self.window.len() > 8 {
            self.window.remove(0);
        }
        let mut padded = self.window.clone();
        padded.resize(8, 0.0);
        self.policy.choose(&padded) //~ warning host-sync
    }
}
