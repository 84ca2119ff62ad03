mod bot;
mod model;

use bot::{Bot, Handler};

fn run(handler: &mut dyn Handler, prices: &[f32]) -> i64 {
    let mut position = 0;
    for &price in prices {
        position += handler.on_tick(price); //~ warning host-sync
    }
    position
}

fn main() {
    let mut bot = Bot {
        policy: model::load(),
        window: Vec::new(),
    };
    let prices: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    println!("{}", run(&mut bot, &prices));
}
