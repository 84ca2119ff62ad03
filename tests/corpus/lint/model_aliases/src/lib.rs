//! The model, exported under an alias per tokenizer: a call on a value
//! built through the alias is a call of the model's own method.

mod model;

pub use model::SentenceModel;

pub struct WordPieces;

pub type WordPieceModel = SentenceModel<WordPieces>;
