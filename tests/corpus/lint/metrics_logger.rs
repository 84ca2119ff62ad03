//! A project helper the lint does not know, declared in devcheck.toml as a
//! pattern: `log_scalar` reads its tensor back to the host.

use tch::{Device, Kind, Tensor};

pub struct Logger;

impl Logger {
    pub fn log_scalar(&mut self, name: &str, value: &Tensor) {
        let _ = (name, value);
    }
}

pub fn train(logger: &mut Logger, device: Device) {
    let mut loss = Tensor::zeros([], (Kind::Float, device));
    for step in 0..1000 {
        loss = loss + 1.0;
        logger.log_scalar("loss", &loss); //~ warning custom-pattern
        if step % 100 == 0 {
            logger.log_scalar("loss/100", &loss); //~ note custom-pattern
        }
        metrics::flush(); //~ note custom-pattern
    }
    logger.log_scalar("final", &loss);
}
