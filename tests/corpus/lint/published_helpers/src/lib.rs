use tch::Tensor;

/// Decodes every cell of the grid, one read per cell.
pub fn decode_boxes(output: &Tensor) -> Vec<(f64, f64)> {
    let mut boxes = Vec::new();
    for cell in 0..output.size()[0] {
        let x = output.double_value(&[cell, 0]); //~ warning host-sync
        let y = output.double_value(&[cell, 1]); //~ warning host-sync
        boxes.push((x, y));
    }
    boxes.extend(grid_scores(output));
    boxes
}

fn grid_scores(output: &Tensor) -> Vec<(f64, f64)> {
    let mut scores = Vec::new();
    for cell in 0..output.size()[0] {
        scores.push((output.double_value(&[cell, 4]), 0.0)); //~ warning host-sync
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_a_grid() {
        let output = Tensor::ones([4, 5], (tch::Kind::Float, tch::Device::Cpu));
        assert_eq!(decode_boxes(&output).len(), 8);
    }
}
