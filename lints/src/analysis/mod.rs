//! Syntax-only analysis of tch code.
//!
//! A file is parsed with syn and walked function by function
//! ([`walker`]): every expression gets a [`values::Val`] saying what is known
//! about it (a tensor, on the CPU or not; a crate-local type; unknown), loops
//! and periodic guards are tracked, and each rule is asked about each call.
//! What the file contributes is copied out as plain [`facts`], because syn's
//! trees cannot leave the thread that parsed them; [`crate_pass`] then
//! resolves what needs the whole crate.

pub(crate) mod crate_pass;
pub mod facts;
pub mod hot_path;
mod macros;
pub mod scope;
mod types;
pub mod values;
mod walker;

use crate::config::CustomPattern;
use crate::prefilter;
use crate::suppress::Suppressions;
use facts::{Cold, FileFacts};
use hot_path::Features;

/// Why a file could not be analysed: (line where known, message).
pub(crate) type AnalysisError = (Option<usize>, String);

/// Parses and walks one file. Must run on a thread with a large stack: syn
/// and the walker recurse once per nesting level.
pub(crate) fn analyze_source(
    text: &str,
    patterns: &[CustomPattern],
    features: &Features,
    file_cold: Option<Cold>,
) -> Result<FileFacts, AnalysisError> {
    if let Err(deep) = prefilter::check_nesting(text) {
        return Err((
            Some(deep.line),
            format!(
                "nesting is deeper than {} levels (brackets, generic arguments or prefix operators); the file was not linted",
                prefilter::MAX_NESTING
            ),
        ));
    }
    let result = match syn::parse_file(text) {
        Ok(file) => {
            let mut walker = walker::Walker::new(
                text,
                prefilter::mentions_tch(text),
                patterns,
                features,
                file_cold,
            );
            walker.file(&file);
            let too_deep = walker.too_deep;
            let mut facts = walker.facts;
            facts.suppressions = Suppressions::scan(text);
            if too_deep {
                // Dropping a syntax tree recurses as deep as the tree is; one
                // the walker could not finish is leaked rather than risk the
                // stack.
                std::mem::forget(file);
            }
            Ok(facts)
        }
        Err(err) => {
            let line = err.span().start().line;
            Err((
                (line > 0).then_some(line),
                format!("could not parse: {err}"),
            ))
        }
    };
    // Spans index a thread-local map that keeps a copy of every file parsed
    // on this thread; nothing refers to them any more.
    proc_macro2::extra::invalidate_current_thread_spans();
    result
}
