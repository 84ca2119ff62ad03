use tafl::search::search;

fn main() {
    let model = tch::CModule::load("model.pt").unwrap();
    let state = vec![0.0f32; 81];
    for _game in 0..10 {
        let visits = search(&model, &state, 800); //~ note host-sync
        println!("{visits:?}");
    }
}
