use sentences::{WordPieceModel, WordPieces};

fn main() {
    let model = WordPieceModel::new(WordPieces);
    let sentences = vec!["a sentence"; 1000];
    for batch_size in [1, 8, 64] {
        let embeddings = model.embed(&sentences, batch_size); //~ note host-sync
        println!("{}", embeddings.len());
    }
}
