use tch::{Device, Kind, Tensor};

/// Kept from an older reply format; nothing calls it.
#[allow(dead_code)]
fn rows(t: &Tensor) -> Vec<Vec<f32>> {
    (0..t.size()[0])
        .map(|i| {
            let mut row = vec![0f32; t.size()[1] as usize];
            t.get(i).copy_data(&mut row, row.len()); //~ note host-sync
            row
        })
        .collect()
}

fn main() {
    let logits = Tensor::rand([4, 8], (Kind::Float, Device::cuda_if_available()));
    println!("{:?}", logits.size());
}
