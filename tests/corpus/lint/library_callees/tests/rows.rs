use tch::{Device, Kind, Tensor};

fn to_rows<T: tch::kind::Element>(t: &Tensor) -> Vec<Vec<T>> {
    (0..t.size()[0]).map(|i| Vec::<T>::try_from(t.get(i)).unwrap()).collect()
}

#[test]
fn rows_are_copied() {
    let t = Tensor::rand([3, 4], (Kind::Float, Device::Cpu));
    assert_eq!(to_rows::<f32>(&t).len(), 3);
}
