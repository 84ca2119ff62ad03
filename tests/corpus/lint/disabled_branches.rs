//! A branch that a boolean constant of the file turns off (`if DEBUG { .. }`
//! with `const DEBUG: bool = false`, or the `else` of `if !SAVE`) never runs
//! while the constant stays as it is: a read in it is a note where a loop
//! runs it, and so is a call of a helper that reads only there. A
//! log macro imported under another name (`use log::debug as log_debug;`)
//! is that macro: a read in its arguments runs only when that level is on.

use log::debug as log_debug;
use tch::{nn, nn::Module, Device, Kind, Tensor};

const DEBUG: bool = false;
const SAVE: bool = false;
const CHECK: bool = true;

fn dump(prefix: &str, x: &Tensor) {
    if DEBUG {
        println!("{prefix}: {}", x.mean(Kind::Float).double_value(&[]));
    }
}

fn save(x: &Tensor, path: &str) {
    if !SAVE {
        return;
    } else {
        x.to_device(Device::Cpu).write_npy(path).unwrap();
    }
}

pub fn layers(blocks: &[nn::Linear], xs: &Tensor) -> Tensor {
    let mut h = xs.shallow_clone();
    for (i, block) in blocks.iter().enumerate() {
        h = block.forward(&h);
        dump("block", &h); //~ note host-sync
        save(&h, &format!("block{i}.npy")); //~ note host-sync
        log_debug!("block {i}: {}", h.max().double_value(&[])); //~ note host-sync
        if CHECK && DEBUG {
            assert!(h.isfinite().all().int64_value(&[]) == 1); //~ note host-sync
        }
        if CHECK {
            println!("{}", h.sum(Kind::Float).double_value(&[])); //~ warning host-sync
        }
    }
    h
}
