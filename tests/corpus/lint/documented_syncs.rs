//! The linear-algebra functions PyTorch documents as synchronizing a CUDA
//! device with the CPU (`linalg_eig`, `linalg_inv`, `linalg_cholesky`,
//! `linalg_svd`, their variants and their older names such as `pinverse`):
//! libtorch checks their result on the host, so each call waits for the
//! device. Their `_ex` variants check nothing unless asked, the triangular
//! solve checks nothing, and on the CPU nothing waits.

use tch::{Device, Kind, Tensor};

pub fn shape_features(masks: &Tensor, device: Device) -> Vec<f64> {
    let mut features = Vec::new();
    for i in 0..masks.size()[0] {
        let points = masks.get(i).nonzero().to_kind(Kind::Float).to(device); //~ warning data-dependent-shape
        let centred = &points - points.mean_dim(Some([0i64].as_slice()), true, Kind::Float);
        let covariance = centred.transpose(0, 1).mm(&centred);
        let (values, _vectors) = covariance.linalg_eig(); //~ warning host-sync
        let inverse = covariance.linalg_inv(); //~ warning host-sync
        let (lower, _info) = covariance.linalg_cholesky_ex(false, false);
        let solved = lower.linalg_solve_triangular(&inverse, false, true, false);
        let pseudo = covariance.pinverse(1e-6); //~ warning host-sync
        let total = values.abs().sum(Kind::Float) + solved.sum(Kind::Float) + pseudo.sum(Kind::Float);
        features.push(total.double_value(&[])); //~ warning host-sync
    }
    let host = Tensor::eye(2, (Kind::Float, Device::Cpu));
    for _ in 0..4 {
        let _ = host.linalg_inv();
    }
    features
}
