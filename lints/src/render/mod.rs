//! Printing a [`Report`]: rustc-style text through annotate-snippets (the
//! renderer rustc itself uses), JSON, or SARIF for code-scanning tools.

mod human;
mod sarif;

pub use human::human;
pub use sarif::{sarif, source_root, SARIF_SCHEMA};

use crate::Report;

/// The report as JSON: `{"findings":[..],"errors":[..],"files_scanned":N,"files_parsed":N}`.
pub fn json(report: &Report) -> String {
    let mut text = serde_json::to_string_pretty(report).unwrap_or_else(|err| {
        // Serialising plain strings and numbers cannot fail; say so loudly
        // rather than print nothing if it ever does.
        format!("{{\"errors\":[{{\"file\":\"\",\"line\":null,\"message\":\"cannot serialise the report: {err}\"}}]}}")
    });
    text.push('\n');
    text
}
