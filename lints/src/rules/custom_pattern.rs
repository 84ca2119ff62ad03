//! `custom-pattern`: calls that match a regex from `devcheck.toml`.

use super::{Hit, NamedCall, Need, Rule, RuleInfo};
use crate::config::Config;

declare_rule! {
    /// ### What it does
    /// Reports calls inside loops whose callee matches a pattern listed under
    /// `[[lint.patterns]]` in `devcheck.toml`. The regex is matched against
    /// the method name for method calls (`item`), the path as written for
    /// function calls (`metrics::flush`), and the name followed by `!` for
    /// macros (`log_scalar!`). Loop context, periodic guards, suppressions
    /// and the call-chain analysis apply exactly as for the built-in rules.
    ///
    /// ### Why is this bad
    /// Projects have their own helpers that read back from the device
    /// (metric loggers, checkpoint hooks, wrappers around `double_value`);
    /// they deserve the same scrutiny as tch's own.
    ///
    /// ### Example
    /// ```rust,ignore
    /// // devcheck.toml:
    /// //   [[lint.patterns]]
    /// //   call = "^log_scalar$"
    /// //   message = "`log_scalar` reads its tensor back to the host"
    /// for step in 0..steps {
    ///     let loss = train_step(&mut model, &batch);
    ///     logger.log_scalar("loss", &loss);
    /// }
    /// ```
    ///
    /// ### Use instead
    /// ```rust,ignore
    /// for step in 0..steps {
    ///     let loss = train_step(&mut model, &batch);
    ///     if step % 100 == 0 {
    ///         logger.log_scalar("loss", &loss);
    ///     }
    /// }
    /// ```
    pub CustomPattern => CUSTOM_PATTERN,
    id: "custom-pattern",
    level: Warn,
    summary: "calls matching a regex listed in devcheck.toml inside loops",
    help: "call it once per epoch or every N steps",
}

impl Rule for CustomPattern {
    fn info(&self) -> &'static RuleInfo {
        &CUSTOM_PATTERN
    }

    /// A pattern can name any callee, in files that never mention tch.
    fn parses_every_file(&self, config: &Config) -> bool {
        !config.patterns.is_empty()
    }

    /// Checks a callee (method name, path as written, or `name!`) against
    /// the configured patterns; the first match wins.
    fn callee(&self, callee: &NamedCall<'_>) -> Option<Hit> {
        if callee.patterns.is_empty() {
            return None;
        }
        let written = callee.name.written();
        callee
            .patterns
            .iter()
            .enumerate()
            .find(|(_, p)| p.call.is_match(&written))
            .map(|(index, p)| {
                let message = p.message.clone().unwrap_or_else(|| {
                    format!(
                        "`{written}` matches the pattern `{}` from devcheck.toml",
                        p.call.as_str()
                    )
                });
                Hit::new(CUSTOM_PATTERN.id, written.as_str(), Need::Name, message)
                    .with_pattern(index)
            })
    }
}
