//! The progress bar on a terminal, in place of libtest's line per trial.

use std::io::IsTerminal;

use libtest_mimic::Arguments;

/// A bar of `total` trials when stderr is a terminal and libtest would print
/// its own lines (not listing, no `--format`), which it then quiets.
pub(super) fn bar(arguments: &mut Arguments, total: usize) -> Option<indicatif::ProgressBar> {
    let wanted = !arguments.list && std::io::stderr().is_terminal() && arguments.format.is_none();
    wanted.then(|| {
        arguments.quiet = true;
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} trials {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    })
}
