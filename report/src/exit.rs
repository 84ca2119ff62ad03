//! The exit codes of devcheck's test binaries and of `cargo devcheck`, named
//! in one place so that the harness, cargo-devcheck and the tests agree (the
//! lint's own are `devcheck_lint::exit`). Scripts and CI jobs test these
//! numbers; the README documents them where each command is described.

/// Every trial passed, the verb did what was asked, or help was printed.
pub const SUCCESS: u8 = 0;

/// A verb's own failure: a sweep that could not grow the batch, doctor's
/// broken libtorch, two dumps beyond tolerance, snapshots left pending review.
pub const FAILURE: u8 = 1;

/// Bad usage or configuration, refused before anything ran: an unknown
/// option, a device that cannot run here, a case's impossible settings, a
/// report path that cannot be written, input files that cannot be read.
pub const USAGE: u8 = 2;

/// A trial failed: libtest's own status for failed tests, which `cargo test`
/// and cargo-nextest expect of a test binary.
pub const TRIALS_FAILED: u8 = 101;

/// Ended by SIGINT, SIGTERM or SIGHUP, the report marked interrupted (128 +
/// SIGINT, as a shell reports an interrupted command).
pub const INTERRUPTED: u8 = 130;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_the_documented_ones() {
        // Hooks and CI scripts test these numbers; changing one breaks them.
        assert_eq!(
            (SUCCESS, FAILURE, USAGE, TRIALS_FAILED, INTERRUPTED),
            (0, 1, 2, 101, 130)
        );
    }
}
