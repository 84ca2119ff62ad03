//! The current agent: modules declared here are compiled.

mod models;
mod nested {
    pub mod steps;
}
#[path = "moved/legacy.rs"]
mod legacy;
// mod unity_env;  // TODO: port to the new agent

fn main() {
    let device = tch::Device::cuda_if_available();
    let agent = models::Agent::new(device);
    for _episode in 0..100 {
        for _step in 0..200 {
            let action = agent.select_action(); //~ warning host-sync
            println!("{action}");
        }
    }
    nested::steps::run(device, 10);
    legacy::run(device, 10);
}
