//! The command line of `cargo xtask`. The binary (`main.rs`) runs it on
//! cargo-devcheck's library (provisioning, the matrix, merge, compare, the
//! bundle, the hook) with devcheck's built-in cases.
//!
//! Being a library lets tests check the command line (`tests/readme.rs` parses
//! every `cargo xtask` line of the README's workflows) without running anything.

pub mod cli;
