//! A free function is never called through a receiver: `pool.install(..)`
//! runs the pool's own method, so a free `install` that nothing else names
//! is code no build runs, and its reads are notes.

mod trainer;

fn main() {
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    pool.install(|| println!("warming up"));
    trainer::train();
}
