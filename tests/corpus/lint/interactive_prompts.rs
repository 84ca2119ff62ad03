//! A loop that reads a line from standard input each time round (a prompt
//! for an image path, `stdin().read_line(&mut line)`, or `for line in
//! stdin.lock().lines()`) answers one request per iteration: its reads run
//! once per request, a note. So does a terminal interface that waits for
//! its next key press (`event::poll`, `event::read`), unless the loop runs
//! a training step itself. A read piece by piece inside it is still a
//! warning.

use std::io::{self, BufRead, Write};
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn classify(net: &nn::Sequential, path: &str, device: Device) -> (i64, f64) {
    let image = Tensor::from_slice(path.as_bytes())
        .to_kind(Kind::Float)
        .to_device(device);
    let probs = net.forward(&image).softmax(-1, Kind::Float);
    let top = probs.argmax(-1, false).int64_value(&[]);
    let confidence = probs.max().double_value(&[]);
    for i in 0..6 {
        println!("{}", probs.double_value(&[i])); //~ warning host-sync
    }
    (top, confidence)
}

pub fn prompt(net: &nn::Sequential, device: Device) -> io::Result<()> {
    loop {
        print!("image path: ");
        io::stdout().flush()?;
        let mut line = String::new();
        io::stdin().read_line(&mut line)?;
        let path = line.trim();
        if path == "quit" {
            break;
        }
        let (top, confidence) = classify(net, path, device); //~ note host-sync
        println!("{top} {confidence:.2}");
    }
    Ok(())
}

pub fn batch(net: &nn::Sequential, device: Device) {
    let stdin = io::stdin();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let score = net
            .forward(&Tensor::from_slice(line.as_bytes()).to_kind(Kind::Float).to_device(device))
            .sum(Kind::Float)
            .double_value(&[]); //~ note host-sync
        println!("{score}");
    }
}

mod event {
    pub enum Event {
        Key(char),
        Resize,
    }
    pub fn poll(_timeout: std::time::Duration) -> std::io::Result<bool> {
        Ok(true)
    }
    pub fn read() -> std::io::Result<Event> {
        Ok(Event::Key('n'))
    }
}

/// A terminal interface answers one key press per iteration (`if
/// event::poll(..)? { if let Event::Key(k) = event::read()? { .. } }`):
/// each model run it makes on a key is one request.
pub fn browse(net: &nn::Sequential, maps: &[Tensor]) -> std::io::Result<()> {
    let device = Device::cuda_if_available();
    let mut shown = 0;
    loop {
        if event::poll(std::time::Duration::from_millis(250))? {
            if let event::Event::Key(key) = event::read()? {
                match key {
                    'q' => return Ok(()),
                    'n' => {
                        shown = (shown + 1) % maps.len();
                        let out = net.forward(&maps[shown].to_device(device));
                        let map = out.to_device(Device::Cpu); //~ note host-sync
                        println!("{:?}", map.size());
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A training loop that also polls for a key to stop stays the step loop.
pub fn train_until_q(vs: &nn::VarStore, net: &nn::Sequential, xs: &Tensor) -> std::io::Result<()> {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    loop {
        let loss = net.forward(xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
        if event::poll(std::time::Duration::ZERO)? {
            if let event::Event::Key('q') = event::read()? {
                return Ok(());
            }
        }
    }
}
