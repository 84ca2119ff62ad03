//! A server reading its client's lines from a connection (a `UnixStream`
//! or `TcpStream`, or a reader over one) answers one request per line,
//! like a loop over standard input: each answer's copy is the point.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use tch::{Device, Kind, Tensor};

fn answer(t: &Tensor) -> Vec<f32> {
    Vec::<f32>::try_from(t.to_device(Device::Cpu)).unwrap()
}

fn serve(stream: UnixStream) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let reader = BufReader::new(stream);
    for line in reader.lines() {
        let line = line?;
        let t = Tensor::rand([4], (Kind::Float, Device::cuda_if_available()));
        let values = answer(&t); //~ note host-sync
        writeln!(writer, "{line} {values:?}")?;
    }
    Ok(())
}

fn main() {
    let listener = UnixListener::bind("/tmp/tensor.sock").unwrap();
    for stream in listener.incoming() {
        serve(stream.unwrap()).unwrap(); //~ note host-sync
    }
}
