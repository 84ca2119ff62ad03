//! Modules declared behind a cfg that is off (`#[cfg(feature = "torch")]
//! mod tch_backend;`, `#[cfg(test)] mod tests;`), and targets whose
//! `required-features` the default build lacks: cargo does not compile
//! their files into a release build of the default features, so what those
//! files hold is outside the release hot path, as if the attribute stood on
//! each of their items.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::analysis::facts::Cold;
use crate::analysis::hot_path::{attrs_cold, Features};
use crate::analysis::scope::Target;
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
    let mut texts: HashMap<PathBuf, Option<String>> = HashMap::new();
    for i in 0..scanned.len() {
        let Some(facts) = &scanned[i].facts else {
            continue;
        };
        if facts.sites.is_empty() && facts.calls.is_empty() {
            continue;
        }
        let features = scanned[i].placement.features.clone();
        let cold = match &scanned[i].placement.feature_off {
            Some(feature) => Some(Cold::Feature(feature.clone())),
            None => cold_module(&scanned[i].path, &features, scanned, &by_path, &mut texts),
        };
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
    texts: &mut HashMap<PathBuf, Option<String>>,
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
        let mut declaring = None;
        for candidate in module_files(dir) {
            let text = texts
                .entry(candidate.clone())
                .or_insert_with(|| text_of(&candidate, scanned, by_path));
            let Some(found) = text.as_deref().and_then(|t| declaration(t, &name)) else {
                continue;
            };
            if let Some(cold) = attributes_cold(&found, &name, features) {
                return Some(cold);
            }
            declaring = Some(candidate);
            break;
        }
        current = declaring?;
    }
    None
}

/// The files of a walked tree that no `mod` item declares (`src/old/main.rs`
/// beside a `src/main.rs` that has no `mod old`, `src/train_v1.rs` that
/// nothing names): cargo never compiles them, so they have nothing to
/// report (not even a parse error) and no function of theirs is called. A file a `#[path]`
/// attribute or an `include!` above it names counts as compiled, and so
/// does one whose directory's module may be declared inline.
pub(crate) fn undeclared(scanned: &[Scanned<'_>]) -> Vec<usize> {
    let by_path: HashMap<PathBuf, usize> = scanned
        .iter()
        .enumerate()
        .map(|(i, s)| (s.path.clone(), i))
        .collect();
    let mut texts: HashMap<PathBuf, Option<Rc<str>>> = HashMap::new();
    let mut known: HashMap<usize, bool> = HashMap::new();
    (0..scanned.len())
        .filter(|&i| {
            (scanned[i].facts.is_some() || scanned[i].error.is_some())
                && declared(i, scanned, &by_path, &mut texts, &mut known, 0) == Some(false)
        })
        .collect()
}

/// Whether the file at `index` is declared by a chain of `mod` items from
/// its target's root: `None` where that cannot be told from the text.
fn declared(
    index: usize,
    scanned: &[Scanned<'_>],
    by_path: &HashMap<PathBuf, usize>,
    texts: &mut HashMap<PathBuf, Option<Rc<str>>>,
    known: &mut HashMap<usize, bool>,
    depth: usize,
) -> Option<bool> {
    if let Some(&answer) = known.get(&index) {
        return Some(answer);
    }
    let file = &scanned[index];
    let scope = &file.placement.scope;
    if file.placement.member.crate_root.is_none()
        || !matches!(
            scope.target,
            Target::Lib | Target::Bin(_) | Target::Example(_) | Target::Bench(_)
        )
        || depth > MAX_LEVELS
    {
        return None;
    }
    if scope.module.is_empty() {
        return Some(true);
    }
    let path = &file.path;
    let stem = path.file_stem()?.to_str()?;
    let dir = path.parent()?;
    let (name, dir) = if stem == "mod" {
        (dir.file_name()?.to_str()?, dir.parent()?)
    } else {
        (stem, dir)
    };
    let parents = module_texts(dir, path, texts, scanned, by_path);
    let declaring = parents.iter().find(|(_, text)| declares(text, name));
    let answer = match declaring {
        // No file for the directory's module: it is declared inline one
        // level up (`mod old { mod net; }`), or not at all.
        None if parents.is_empty() => {
            let own = dir.file_name()?.to_str()?;
            let above = module_texts(dir.parent()?, path, texts, scanned, by_path);
            if above.is_empty() || above.iter().any(|(_, text)| declares(text, own)) {
                return None;
            }
            false
        }
        None => false,
        Some((parent, _)) => {
            let parent = *by_path.get(parent)?;
            declared(parent, scanned, by_path, texts, known, depth + 1)?
        }
    };
    // Where no chain of `mod` items reaches it, a `#[path]` or an
    // `include!` above it may: asked only then.
    let crate_root = file.placement.member.crate_root.as_deref()?;
    let answer = answer
        || named_by_path(path, crate_root, &mut |dir, skip| {
            module_texts(dir, skip, texts, scanned, by_path)
        });
    known.insert(index, answer);
    Some(answer)
}

/// The texts of the module files of `dir` that exist, other than `skip`.
fn module_texts(
    dir: &Path,
    skip: &Path,
    texts: &mut HashMap<PathBuf, Option<Rc<str>>>,
    scanned: &[Scanned<'_>],
    by_path: &HashMap<PathBuf, usize>,
) -> Vec<(PathBuf, Rc<str>)> {
    module_files(dir)
        .into_iter()
        .filter(|candidate| candidate != skip)
        .filter_map(|candidate| {
            let text = texts
                .entry(candidate.clone())
                .or_insert_with(|| text_of(&candidate, scanned, by_path).map(Rc::from))
                .clone()?;
            Some((candidate, text))
        })
        .collect()
}

/// Whether a module file of a directory above `path` (up to the crate
/// root) brings it in by name: `#[path = "moved/legacy.rs"] mod legacy;`
/// or `include!("parts/layers.rs")`.
fn named_by_path(
    path: &Path,
    crate_root: &Path,
    texts_at: &mut impl FnMut(&Path, &Path) -> Vec<(PathBuf, Rc<str>)>,
) -> bool {
    let mut dir = path.parent();
    while let Some(current) = dir {
        let named = texts_at(current, path).iter().any(|(_, text)| {
            quoted_paths(text).any(|quoted| {
                let quoted: PathBuf = Path::new(quoted)
                    .components()
                    .filter(|c| matches!(c, std::path::Component::Normal(_)))
                    .collect();
                !quoted.as_os_str().is_empty() && path.ends_with(&quoted)
            })
        });
        if named {
            return true;
        }
        if current == crate_root {
            break;
        }
        dir = current.parent();
    }
    false
}

/// The paths in a file's `#[path = ".."]` attributes and `include!("..")`
/// calls.
fn quoted_paths(text: &str) -> impl Iterator<Item = &str> {
    ["#[path", "include!("].into_iter().flat_map(move |marker| {
        text.match_indices(marker).filter_map(move |(at, _)| {
            let rest = text[at + marker.len()..].trim_start();
            let rest = rest.strip_prefix('=').unwrap_or(rest).trim_start();
            let rest = rest.strip_prefix('"')?;
            rest.find('"').map(|close| &rest[..close])
        })
    })
}

/// The files that can declare the modules of directory `dir`:
/// `dir/mod.rs`, `dir.rs` beside it, and a target root's `lib.rs` or
/// `main.rs` in it.
fn module_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs")];
    if let (Some(parent), Some(own)) = (dir.parent(), dir.file_name()) {
        let mut file = own.to_os_string();
        file.push(".rs");
        files.push(parent.join(file));
    }
    files
}

/// Whether `text` names module `name` in a `mod` item, in any form
/// (`pub(in crate) mod name;`, `mod name {`, inside a macro).
fn declares(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices("mod").any(|(at, _)| {
        // `// pub mod unity_env;  // TODO` declares nothing.
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if text[line_start..at].contains("//") {
            return false;
        }
        let before = text[..at].chars().next_back();
        let rest = &text[at + 3..];
        let trimmed = rest.trim_start();
        !before.is_some_and(ident)
            && trimmed.len() < rest.len()
            && trimmed
                .strip_prefix(name)
                .or_else(|| {
                    trimmed
                        .strip_prefix("r#")
                        .and_then(|t| t.strip_prefix(name))
                })
                .is_some_and(|after| !after.starts_with(ident))
    })
}

/// A file's text: kept from the walk, or read from disk (not over 4 MiB).
fn text_of(
    path: &Path,
    scanned: &[Scanned<'_>],
    by_path: &HashMap<PathBuf, usize>,
) -> Option<String> {
    by_path
        .get(path)
        .and_then(|&i| scanned[i].text().map(str::to_owned))
        .or_else(|| {
            std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= 4 << 20)
                .and_then(|_| std::fs::read_to_string(path).ok())
        })
}

/// The attributes of a `mod name;` declaration of a file, on the lines
/// right above it or before it on its line (empty where it has none);
/// `None` where the file declares no such module.
fn declaration(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut inline = String::new();
    let at = lines.iter().position(|line| {
        // `#[cfg(test)] mod tests;`: attributes on the line itself.
        let mut rest = line.trim_start();
        inline.clear();
        while rest.starts_with("#[") {
            let Some(end) = closing_bracket(rest) else {
                return false;
            };
            inline.push_str(&rest[..=end]);
            inline.push('\n');
            rest = rest[end + 1..].trim_start();
        }
        let rest = rest
            .strip_prefix("pub(crate) ")
            .or_else(|| rest.strip_prefix("pub(super) "))
            .or_else(|| rest.strip_prefix("pub "))
            .unwrap_or(rest);
        rest.strip_prefix("mod ")
            .and_then(|rest| rest.trim_start().strip_prefix(name))
            .is_some_and(|rest| rest.trim_start().starts_with(';'))
    })?;
    let above: Vec<&str> = lines[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| only_attributes(l) || l.starts_with("//"))
        .filter(|l| l.starts_with("#["))
        .collect();
    let mut attributes = above.into_iter().rev().collect::<Vec<_>>().join("\n");
    if !attributes.is_empty() {
        attributes.push('\n');
    }
    attributes.push_str(&inline);
    Some(attributes)
}

/// Whether a line holds attributes and nothing else (`#[cfg(test)]`, not
/// `#[cfg(test)] mod tests;`).
fn only_attributes(line: &str) -> bool {
    let mut rest = line.trim();
    if !rest.starts_with("#[") {
        return false;
    }
    while rest.starts_with("#[") {
        let Some(end) = closing_bracket(rest) else {
            return false;
        };
        rest = rest[end + 1..].trim_start();
    }
    rest.is_empty()
}

/// The index of the `]` that closes the attribute `text` starts with.
fn closing_bracket(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Why a module declared under these attributes is not compiled, if it is
/// not.
fn attributes_cold(attributes: &str, name: &str, features: &Features) -> Option<Cold> {
    if attributes.is_empty() {
        return None;
    }
    let file = syn::parse_file(&format!("{attributes}\nmod {name};")).ok()?;
    match file.items.first()? {
        syn::Item::Mod(m) => attrs_cold(&m.attrs, features),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mod_item_in_any_form_declares_its_module() {
        assert!(declares("mod net;\n", "net"));
        assert!(declares("pub(in crate::agent) mod  net ;", "net"));
        assert!(declares("mod nested {\n    pub mod net;\n}", "net"));
        assert!(declares(
            "cfg_if! { if #[cfg(unix)] { mod r#net; } }",
            "net"
        ));
        assert!(!declares("mod network;\n", "net"));
        assert!(!declares("// the model\nuse crate::net;\n", "net"));
        assert!(!declares("fn model() {}\nlet net = 1;", "net"));
        assert!(!declares("// pub mod net;  // TODO: fix\n", "net"));
        assert!(declares("pub mod net; // the network\n", "net"));
    }

    #[test]
    fn path_attributes_and_includes_name_files() {
        let text = "#[path = \"moved/legacy.rs\"]\nmod legacy;\ninclude!(\"parts/layers.rs\");\n\
                    include!(concat!(env!(\"OUT_DIR\"), \"/gen.rs\"));";
        assert_eq!(
            quoted_paths(text).collect::<Vec<_>>(),
            ["moved/legacy.rs", "parts/layers.rs"]
        );
    }

    #[test]
    fn declarations_carry_the_attributes_above_and_before_them() {
        let text = "//! Root.\n#[cfg(feature = \"cuda\")]\n// the GPU path\npub(crate) mod cuda;\n\
                    #[cfg(test)] mod tests;\nmod train;\n";
        assert_eq!(
            declaration(text, "cuda").as_deref(),
            Some("#[cfg(feature = \"cuda\")]\n")
        );
        assert_eq!(
            declaration(text, "tests").as_deref(),
            Some("#[cfg(test)]\n")
        );
        assert_eq!(declaration(text, "train").as_deref(), Some(""));
        assert_eq!(declaration(text, "missing"), None);
        assert_eq!(declaration("mod trainer;\n", "train"), None);
        let features = Features::only(&[]);
        assert_eq!(
            attributes_cold("#[cfg(feature = \"cuda\")]", "cuda", &features),
            Some(Cold::Feature("cuda".into()))
        );
        assert_eq!(
            attributes_cold("#[cfg(test)]\n", "tests", &features),
            Some(Cold::Test)
        );
        assert_eq!(attributes_cold("", "train", &features), None);
        let on = Features::only(&["cuda".into()]);
        assert_eq!(
            attributes_cold("#[cfg(feature = \"cuda\")]", "cuda", &on),
            None
        );
    }
}
