//! A crate type with a method of a name only tch has (a bitboard's
//! `is_nonzero`) is as likely what a receiver of unknown type calls: such a
//! call is not taken for tch's. A receiver known to be a tensor still is.

use std::ops::BitAnd;
use tch::{Device, Kind, Tensor};

#[derive(Clone, Copy)]
pub struct BitBoard(u128);

impl BitAnd for BitBoard {
    type Output = BitBoard;
    fn bitand(self, other: BitBoard) -> BitBoard {
        BitBoard(self.0 & other.0)
    }
}

impl BitBoard {
    pub fn is_nonzero(&self) -> bool {
        self.0 != 0
    }

    pub fn moves(&self, mask: &BitBoard, steps: u8) -> usize {
        let mut count = 0;
        for _ in 0..steps {
            let masked = *self & *mask;
            if masked.is_nonzero() {
                count += 1;
            }
        }
        count
    }
}

pub fn count_active(values: &[Tensor]) -> usize {
    let device = Device::cuda_if_available();
    let mut active = 0;
    for v in values {
        let v = v.to_device(device).sum(Kind::Float);
        if v.is_nonzero() { //~ warning host-value-op
            active += 1;
        }
    }
    active
}
