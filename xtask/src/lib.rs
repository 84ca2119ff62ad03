//! The parts of `cargo xtask` that need no libtorch and no child process: the
//! command line, and the pure JSON work on matrix reports (reading, merging the
//! reports of several machines, the device × check table and the Markdown
//! summary). The binary (`main.rs`) is glue over these plus provisioning.
//!
//! Being a library lets tests check the command line (`tests/readme.rs` parses
//! every `cargo xtask` line of the README's workflows) and snapshot the summary
//! without running anything.

pub mod cli;
pub mod device_matrix;
pub mod merge;
pub mod report;
pub mod summary;
