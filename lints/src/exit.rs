//! The exit codes of `devcheck-lint` (and of `cargo devcheck lint`, the
//! same program) and of this crate's benches, named in one place so that
//! the command line, [`crate::Report::exit_code`], the benches and the tests
//! agree. The README's "Exit codes" section documents them for users.

/// Nothing at warning level or above was found; also `--help`,
/// `--version`, `--list-rules` and `--explain`.
pub const SUCCESS: u8 = 0;

/// Warnings or errors were found. The real-code bench uses it for findings
/// that no verdict judges.
pub const FINDINGS: u8 = 1;

/// Bad usage or configuration, or some input could not be read, decoded,
/// parsed or fully analysed (everything else is still linted and reported).
pub const FAILURE: u8 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_the_documented_ones() {
        // Hooks and CI scripts test these numbers; changing one breaks them.
        assert_eq!((SUCCESS, FINDINGS, FAILURE), (0, 1, 2));
    }
}
