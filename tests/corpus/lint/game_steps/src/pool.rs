//! Games that run their searches until a leaf needs the network.

pub struct Game {
    pub pending: Option<Vec<f32>>,
    pub moves: usize,
}

pub enum Progress {
    NeedsLeaf,
    Moved,
    Over,
}

impl Game {
    fn step(&mut self) -> Progress {
        if self.moves > 100 {
            Progress::Over
        } else if self.pending.is_none() {
            self.pending = Some(vec![0.0; 16]);
            Progress::NeedsLeaf
        } else {
            self.moves += 1;
            Progress::Moved
        }
    }

    pub fn pump(&mut self) {
        loop {
            match self.step() {
                Progress::NeedsLeaf | Progress::Over => return,
                Progress::Moved => {}
            }
        }
    }

    pub fn back_up(&mut self, _policy: &[f32]) {
        self.pending = None;
    }
}
