//! Metrics shared by the workspace's trainers.

pub mod accuracy;
