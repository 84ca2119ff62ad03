use tch::{nn, Device, Kind, Tensor};

pub struct SentenceModel<T> {
    dense: nn::Linear,
    tokenizer: T,
    device: Device,
}

impl<T> SentenceModel<T> {
    pub fn new(tokenizer: T) -> SentenceModel<T> {
        let device = Device::cuda_if_available();
        let vs = nn::VarStore::new(device);
        let dense = nn::linear(vs.root(), 8, 8, Default::default());
        SentenceModel { dense, tokenizer, device }
    }

    /// Embeds the sentences batch by batch, copying each batch to the host.
    pub fn embed(&self, sentences: &[&str], batch_size: usize) -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for batch in sentences.chunks(batch_size) {
            let xs = Tensor::zeros([batch.len() as i64, 8], (Kind::Float, self.device));
            let embeddings = xs.apply(&self.dense);
            out.extend(Vec::<Vec<f32>>::try_from(embeddings).unwrap()); //~ warning host-sync
        }
        out
    }

    /// The lengths of each batch's sentences, declared a `Vec` of
    /// numbers: what the method of unknown result returns is that `Vec`,
    /// not a tensor, and making an array of it copies nothing.
    pub fn lengths<L: Copy>(&self, batches: &[Tensor]) -> Vec<ndarray::Array1<L>> {
        let mut out = Vec::new();
        for batch in batches {
            let lengths: Vec<L> = batch.sentence_lengths();
            out.push(ndarray::Array1::<L>::from(lengths));
        }
        out
    }
}
