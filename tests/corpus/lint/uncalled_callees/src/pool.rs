//! A pool whose analysis method nothing calls: `stats` is also the name of
//! locals (its own and the driver's), but a method is only reached
//! through a receiver or a path (`pool.stats()`, `Pool::stats`), so a
//! local of that name does not count as a use. Its per-entry reads never
//! run; the scoring the driver calls per step still warns.
use tch::{Device, Kind, Tensor};

pub struct Pool {
    pub entries: Vec<Tensor>,
}

impl Pool {
    pub fn new(device: Device) -> Pool {
        Pool {
            entries: (0..4).map(|_| Tensor::rand([16], (Kind::Float, device))).collect(),
        }
    }

    pub fn stats(&self) -> Vec<(f64, f64)> {
        let mut stats = Vec::new();
        for entry in &self.entries {
            let mean = entry.mean(Kind::Float).double_value(&[]); //~ note host-sync
            stats.push((mean, 0.0));
        }
        stats
    }

    pub fn score(&self, candidate: &Tensor) -> f64 {
        let scores: Vec<Tensor> = self.entries.iter().map(|e| e.dot(candidate)).collect();
        Tensor::stack(&scores, 0).max().double_value(&[]) //~ warning host-sync
    }
}

pub fn drive(device: Device, steps: usize) -> usize {
    let pool = Pool::new(device);
    let mut stats = 0;
    for _ in 0..steps {
        let candidate = Tensor::rand([16], (Kind::Float, device));
        if pool.score(&candidate) > 0.5 { //~ warning host-sync
            stats += 1;
        }
    }
    stats
}
