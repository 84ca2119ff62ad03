use tch::Tensor;

/// Gathers the cached rows a slot mapping names, one row at a time.
pub fn gather(cache: &Tensor, slots: &Tensor) -> Tensor {
    let mut indices = vec![0i32; slots.numel()];
    slots.copy_data(&mut indices, slots.numel()); //~ warning host-sync
    Tensor::stack(&indices.iter().map(|&i| cache.get(i as i64)).collect::<Vec<_>>(), 0)
}
