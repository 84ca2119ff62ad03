//! The first version of the agent: nothing declares `old`, so cargo never
//! compiles this file or the modules it declares.

mod network;

fn main() {
    let agent = network::Agent::new(tch::Device::cuda_if_available());
    for _step in 0..200 {
        println!("{}", agent.select_action());
    }
}
