use cpu_library::{Agent, DqnAgent, Environment};

struct Corridor(i64);

impl Environment for Corridor {
    fn state(&self) -> Vec<f32> {
        vec![self.0 as f32; 4]
    }
    fn step(&mut self, action: i64) -> bool {
        self.0 += action;
        self.0 > 10
    }
}

#[test]
fn learns_on_the_cpu() {
    let device = tch::Device::Cpu;
    let vs = tch::nn::VarStore::new(device);
    let mut agent = DqnAgent::new(&vs.root(), device);
    assert!(agent.train(&mut Corridor(0), 100) <= 100);
}
