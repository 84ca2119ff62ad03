use tch::Device;
use wm_nn::NnModel;
use wm_search::search;

fn main() -> tch::Result<()> {
    let model = NnModel::load("model.pt", Device::cuda_if_available())?;
    for game in 0..100 {
        // `search` reads in its own loop of simulations, reported there.
        let value = search(&model, 800); //~ note host-sync
        println!("game {game}: {value}");
    }
    Ok(())
}
