//! The bot predicts with its model; nothing trains it.

mod ml;

fn main() {
    let model = ml::Model::new();
    for _tick in 0..1000 {
        let score = model.predict(&[0.5; 8]); //~ warning host-sync
        println!("{score}");
    }
}
