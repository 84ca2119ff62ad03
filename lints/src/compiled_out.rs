//! Modules declared behind a cfg that is off (`#[cfg(feature = "torch")]
//! mod tch_backend;`, `#[cfg(test)] mod tests;`): cargo does not compile
//! their files into a release build of the default features, so what those
//! files hold is outside the release hot path, as if the attribute stood on
//! each of their items.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::analysis::facts::Cold;
use crate::analysis::hot_path::{attrs_cold, Features};
use crate::engine::Scanned;

/// How far up a module tree the declarations are followed.
const MAX_LEVELS: usize = 16;

/// Marks the files of modules declared behind a cfg that is off, and of the
/// modules inside them.
pub(crate) fn mark(scanned: &mut [Scanned<'_>]) {
    let by_path: HashMap<PathBuf, usize> = scanned
        .iter()
        .enumerate()
        .map(|(i, s)| (s.path.clone(), i))
        .collect();
    let mut declared: HashMap<PathBuf, Vec<(String, Option<Cold>)>> = HashMap::new();
    for i in 0..scanned.len() {
        let Some(facts) = &scanned[i].facts else {
            continue;
        };
        if facts.sites.is_empty() && facts.calls.is_empty() {
            continue;
        }
        let features = scanned[i].placement.features.clone();
        let cold = cold_module(
            &scanned[i].path,
            &features,
            scanned,
            &by_path,
            &mut declared,
        );
        if let (Some(cold), Some(facts)) = (cold, &mut scanned[i].facts) {
            facts.make_cold(&cold);
        }
    }
}

/// Why the module of the file at `path`, or one around it, is not
/// compiled: the cfg on its `mod` declaration, if that is off.
fn cold_module(
    path: &Path,
    features: &Features,
    scanned: &[Scanned<'_>],
    by_path: &HashMap<PathBuf, usize>,
    declared: &mut HashMap<PathBuf, Vec<(String, Option<Cold>)>>,
) -> Option<Cold> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LEVELS {
        let stem = current.file_stem()?.to_str()?.to_owned();
        let dir = current.parent()?;
        if matches!(stem.as_str(), "lib" | "main") || dir.file_name()? == "bin" {
            return None;
        }
        // `dir/name.rs` or `dir/name/mod.rs` is declared in `dir`'s module
        // file: `dir/mod.rs`, `dir/lib.rs`, `dir/main.rs` or `dir.rs`.
        let (name, dir) = if stem == "mod" {
            (dir.file_name()?.to_str()?.to_owned(), dir.parent()?)
        } else {
            (stem, dir)
        };
        let mut candidates = vec![dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs")];
        if let (Some(parent), Some(own)) = (dir.parent(), dir.file_name()) {
            let mut file = own.to_os_string();
            file.push(".rs");
            candidates.push(parent.join(file));
        }
        let mut declaring = None;
        for candidate in candidates {
            let decls = declared
                .entry(candidate.clone())
                .or_insert_with(|| declarations(&candidate, features, scanned, by_path));
            if let Some((_, cold)) = decls.iter().find(|(n, _)| *n == name) {
                if cold.is_some() {
                    return cold.clone();
                }
                declaring = Some(candidate);
                break;
            }
        }
        current = declaring?;
    }
    None
}

/// The `mod name;` declarations of a file, each with why it is not
/// compiled, if it is not; none where the file cannot be read or parsed.
fn declarations(
    path: &Path,
    features: &Features,
    scanned: &[Scanned<'_>],
    by_path: &HashMap<PathBuf, usize>,
) -> Vec<(String, Option<Cold>)> {
    let kept = by_path
        .get(path)
        .and_then(|&i| scanned[i].text().map(str::to_owned));
    let Some(text) = kept.or_else(|| {
        std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= 4 << 20)
            .and_then(|_| std::fs::read_to_string(path).ok())
    }) else {
        return Vec::new();
    };
    let Ok(file) = syn::parse_file(&text) else {
        return Vec::new();
    };
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if m.content.is_none() => {
                Some((m.ident.to_string(), attrs_cold(&m.attrs, features)))
            }
            _ => None,
        })
        .collect()
}
