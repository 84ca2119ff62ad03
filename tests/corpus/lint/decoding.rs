//! Greedy and sampled decoding of a sequence model: the per-token reads
//! that make autoregressive generation host-bound.

use tch::{nn::Module, Device, IndexOp, Kind, Tensor};

pub struct Decoder<M: Module> {
    model: M,
    eos: Tensor,
    eos_id: i64,
    device: Device,
}

impl<M: Module> Decoder<M> {
    pub fn greedy(&self, prompt: &Tensor, max_len: usize) -> Vec<i64> {
        let mut tokens = prompt.shallow_clone();
        let mut out = Vec::new();
        for _ in 0..max_len {
            let logits = self.model.forward(&tokens);
            let next = logits.i((.., -1, ..)).argmax(-1, false);
            let id = next.int64_value(&[0]); //~ warning host-sync
            out.push(id);
            if next.equal(&self.eos) { //~ warning host-value-op
                break;
            }
            tokens = Tensor::cat(&[tokens, next.unsqueeze(0)], 1);
        }
        out
    }

    pub fn sample(&self, prompt: &Tensor, temperature: f64) -> Tensor {
        let mut tokens = prompt.shallow_clone();
        let mut finished = Tensor::zeros([1], (Kind::Bool, self.device));
        // The loop condition runs on every iteration too.
        while finished.is_nonzero() == false { //~ warning host-value-op
            let logits = self.model.forward(&tokens) / temperature;
            let next = logits.softmax(-1, Kind::Float).multinomial(1, true);
            finished = next.eq(self.eos_id);
            tokens = Tensor::cat(&[tokens, next], 1);
        }
        tokens
    }

    pub fn beam_step(&self, beams: &[Tensor]) -> Vec<Tensor> {
        let mut survivors = Vec::new();
        loop {
            for beam in beams {
                let scores = self.model.forward(beam);
                let kept = scores.unique_consecutive(false, false, None); //~ warning data-dependent-shape
                survivors.push(kept);
            }
            if survivors.len() > 4 {
                break;
            }
        }
        survivors
    }
}

/// Every N tokens, a progress line: a note.
pub fn stream(decoder: &impl Module, mut tokens: Tensor, steps: usize) -> Tensor {
    for step in 0..steps {
        let next = decoder.forward(&tokens).argmax(-1, true);
        if (step + 1) % 16 == 0 {
            eprintln!("{} tokens, last {}", step + 1, next.int64_value(&[0, 0])); //~ note host-sync
        }
        tokens = Tensor::cat(&[tokens, next], 1);
    }
    tokens
}
