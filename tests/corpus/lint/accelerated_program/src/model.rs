use tch::{nn, nn::Module, Tensor};

pub trait LanguageModel {
    fn loss(&self, xs: &Tensor, ys: &Tensor) -> Tensor;
    fn generate(&self, start: &Tensor, steps: i64) -> Vec<i64>;
}

pub struct Bigram {
    pub embedding: nn::Embedding,
}

impl LanguageModel for Bigram {
    fn loss(&self, xs: &Tensor, ys: &Tensor) -> Tensor {
        self.embedding.forward(xs).cross_entropy_for_logits(ys)
    }

    fn generate(&self, start: &Tensor, steps: i64) -> Vec<i64> {
        let mut token = start.shallow_clone();
        let mut out = Vec::new();
        for _ in 0..steps {
            let probs = self.embedding.forward(&token).softmax(-1, tch::Kind::Float);
            let next = i64::try_from(probs.multinomial(1, true)).unwrap();
            out.push(next);
            token = Tensor::from_slice(&[next]);
        }
        out
    }
}

/// A model the program keeps beside the one it trains.
pub struct Unigram {
    pub logits: Tensor,
}

impl LanguageModel for Unigram {
    fn loss(&self, _xs: &Tensor, ys: &Tensor) -> Tensor {
        self.logits.expand([ys.size()[0], -1], false).cross_entropy_for_logits(ys)
    }

    fn generate(&self, start: &Tensor, steps: i64) -> Vec<i64> {
        let mut out = vec![i64::try_from(start).unwrap()];
        for _ in 0..steps {
            let probs = (&self.logits + start * 0).softmax(-1, tch::Kind::Float);
            out.push(i64::try_from(probs.multinomial(1, true)).unwrap()); //~ warning host-sync
        }
        out
    }
}
