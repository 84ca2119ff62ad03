#[cfg(not(feature = "cuda"))]
pub use super::refkernels::*;
#[cfg(feature = "cuda")]
pub use fastkernels::*;
