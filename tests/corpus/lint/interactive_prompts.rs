//! A loop that reads a line from standard input each time round (a prompt
//! for an image path, `stdin().read_line(&mut line)`, or `for line in
//! stdin.lock().lines()`) answers one request per iteration: its reads run
//! once per request, a note. A read piece by piece inside it is still a
//! warning.

use std::io::{self, BufRead, Write};
use tch::{nn, nn::Module, Device, Kind, Tensor};

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
