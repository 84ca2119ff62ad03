#[cfg(feature = "torch")]
pub mod train;
