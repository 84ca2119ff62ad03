//! Names the user's line of an op from its native stack: the first frame
//! outside devcheck, tch, torch-sys, the standard library and libtorch, with
//! its enclosing function and the tch call that led there (`f64::try_from`,
//! `Tensor::double_value`).
//!
//! Return addresses are symbolized once each, process-wide, so the cost is per
//! distinct site, not per op. Paths are relative to the user's repository.

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

/// Who a frame's code belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// C or C++: libtorch, the shim, libc.
    Native,
    /// Rust's standard library, libtest.
    Std,
    /// tch or torch-sys.
    Tch,
    /// devcheck's own machinery (its built-in cases are user code).
    Devcheck,
    /// Everything else: the code under test.
    User,
}

/// One (possibly inlined) frame of a symbolized return address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The demangled function, without its hash.
    pub function: Option<String>,
    /// The source file, as the debug info records it.
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
    /// Whose code it is.
    pub owner: Owner,
}

/// A place in the user's source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Site {
    /// Path relative to the repository root (never absolute).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// The enclosing function, shortened (`Net::step`, `train::log_loss`).
    pub function: String,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// What a stack says about the op that captured it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallSite {
    /// The user's line.
    pub site: Option<Site>,
    /// The tch call the user made (the outermost tch frame), shortened.
    pub api: Option<String>,
    /// The tch call inside it that reached libtorch (`Tensor::f_to_device` inside `f64::try_from`).
    pub inner_api: Option<String>,
    /// A `devcheck::readbacks` wrapper on the way: the read is marked as intended.
    pub intended: Option<String>,
}

impl CallSite {
    /// `src/main.rs:88:17 (Tensor::view)`, as failures name a line; `None` without a user frame.
    pub fn located(&self) -> Option<String> {
        let site = self.site.as_ref()?;
        Some(match &self.api {
            Some(api) => format!("{site} ({api})"),
            None => site.to_string(),
        })
    }
}

type Cache = Mutex<HashMap<usize, Arc<[Frame]>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The frames of one return address (several where calls were inlined), innermost first.
pub fn symbolize(address: usize) -> Arc<[Frame]> {
    if let Some(frames) = crate::lock(cache()).get(&address) {
        return Arc::clone(frames);
    }
    let mut frames = Vec::new();
    // A return address points after the call; the call itself is one byte earlier.
    backtrace::resolve(address.saturating_sub(1) as *mut c_void, |symbol| {
        let function = symbol.name().map(|n| format!("{n:#}"));
        let file = symbol.filename().map(|p| p.to_string_lossy().into_owned());
        let owner = owner_of(function.as_deref(), file.as_deref());
        frames.push(Frame {
            function,
            file,
            line: symbol.lineno(),
            column: symbol.colno(),
            owner,
        });
    });
    let frames: Arc<[Frame]> = frames.into();
    crate::lock(cache()).insert(address, Arc::clone(&frames));
    frames
}

/// Whose code a frame is, from its file where the debug info has one, else its symbol.
pub fn owner_of(function: Option<&str>, file: Option<&str>) -> Owner {
    let function = function.unwrap_or("");
    let starts = |prefixes: &[&str]| {
        prefixes
            .iter()
            .any(|p| function.starts_with(p) || function.starts_with(&format!("<{p}")))
    };
    if let Some(file) = file {
        if !file.ends_with(".rs") {
            return Owner::Native;
        }
        let file = file.replace('\\', "/");
        if file.contains("/rustc/")
            || file.starts_with("library/")
            || file.contains("/library/std/")
            || file.contains("/backtrace-0.")
        {
            // The standard library, and the unwinder that took the stack.
            return Owner::Std;
        }
        if is_tch_path(&file) {
            return Owner::Tch;
        }
    } else if !looks_like_rust(function) {
        return Owner::Native;
    }
    if starts(&[
        "std::",
        "core::",
        "alloc::",
        "test::",
        "libtest_mimic::",
        "backtrace::",
    ]) {
        return Owner::Std;
    }
    if starts(&["tch::", "torch_sys::"]) {
        return Owner::Tch;
    }
    // devcheck's built-in cases, and its own unit tests, are code under test.
    if starts(&["devcheck::cases::"]) || function.contains("::tests::") {
        return Owner::User;
    }
    if starts(&["devcheck::"]) {
        return Owner::Devcheck;
    }
    if file.is_none() && function.contains("tch::wrappers::tensor::Tensor>>::") {
        // `<f64 as TryFrom<&tch::…::Tensor>>::try_from` without debug info.
        return Owner::Tch;
    }
    Owner::User
}

fn is_tch_path(file: &str) -> bool {
    ["/tch-", "/torch-sys-"].iter().any(|crate_dir| {
        file.split(crate_dir)
            .skip(1)
            .any(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
    }) || file.contains("/tch-rs/")
}

fn looks_like_rust(function: &str) -> bool {
    function.contains("::") && !function.contains('(')
}

/// The user's line, the tch call and any readbacks wrapper in a stack (innermost first).
pub fn call_site(addresses: &[usize]) -> CallSite {
    let frames: Vec<Frame> = addresses
        .iter()
        .flat_map(|a| symbolize(*a).iter().cloned().collect::<Vec<_>>())
        .collect();
    call_site_of_frames(&frames)
}

/// [`call_site`] over frames already symbolized (innermost first).
pub fn call_site_of_frames(frames: &[Frame]) -> CallSite {
    let mut found = CallSite::default();
    let mut tch_frames: Vec<&Frame> = Vec::new();
    for frame in frames {
        match frame.owner {
            Owner::Tch => tch_frames.push(frame),
            Owner::Devcheck => {
                let name = frame.function.as_deref().unwrap_or("");
                if found.intended.is_none() && name.contains("devcheck::readbacks::") {
                    found.intended = Some(short_function(name.trim_end_matches("::{{closure}}")));
                }
            }
            Owner::User => {
                if let (Some(file), Some(line)) = (&frame.file, frame.line) {
                    found.site = Some(Site {
                        file: repository_relative(file),
                        line,
                        column: frame.column.unwrap_or(0),
                        function: frame
                            .function
                            .as_deref()
                            .map(short_function)
                            .unwrap_or_else(|| "?".to_owned()),
                    });
                    break;
                }
            }
            Owner::Native | Owner::Std => {}
        }
    }
    let named = |frame: &&Frame| {
        frame
            .function
            .as_deref()
            .map(|f| tch_call(&short_function(f)))
    };
    found.api = tch_frames.last().and_then(named);
    // The next call inward with another name: `f64::try_from(tensor)` by value
    // is the by-reference `f64::try_from` inside, the same call to the reader.
    found.inner_api = tch_frames
        .iter()
        .rev()
        .filter_map(named)
        .find(|name| Some(name) != found.api.as_ref());
    found
}

/// A tch method without its fallible prefix: `Tensor::f_double_value` and
/// `Tensor::double_value` are the same call to a reader (and to a snapshot).
fn tch_call(short: &str) -> String {
    match short.split_once("::f_") {
        Some((ty, method)) if !ty.contains("::") => format!("{ty}::{method}"),
        _ => short.to_owned(),
    }
}

/// `<devices::Net as devcheck::case::Model>::step` → `Net::step`;
/// `tch::wrappers::tensor::Tensor::double_value` → `Tensor::double_value`.
pub fn short_function(name: &str) -> String {
    let segments = split_path(name);
    let shorten_type = |ty: &str| -> String {
        let ty = ty.trim_start_matches('&').trim();
        let ty = ty.strip_prefix("impl ").unwrap_or(ty);
        let segments = split_path(ty);
        segments
            .last()
            .map_or_else(|| ty.to_owned(), |s| s.to_string())
    };
    let rendered: Vec<String> = segments
        .iter()
        .map(|segment| {
            if let Some(inner) = segment.strip_prefix('<').and_then(|s| s.strip_suffix('>')) {
                // `<X as Trait>`, `<impl X>` or `<impl Trait for X>`: the type
                // is what a reader knows.
                let ty = match inner
                    .strip_prefix("impl ")
                    .and_then(|i| i.rsplit_once(" for "))
                {
                    Some((_, ty)) => ty,
                    None => inner.split(" as ").next().unwrap_or(inner),
                };
                shorten_type(ty)
            } else {
                segment.to_string()
            }
        })
        .collect();
    // Keep the last two meaningful segments (type or module, then function),
    // with closures attached to the function they are in.
    let mut tail: Vec<&str> = Vec::new();
    for segment in rendered.iter().rev() {
        tail.push(segment);
        if !segment.starts_with("{{") && tail.iter().filter(|s| !s.starts_with("{{")).count() == 2 {
            break;
        }
    }
    tail.reverse();
    tail.join("::")
}

/// Splits a path at `::` outside of `<…>`.
fn split_path(name: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                segments.push(&name[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    segments.push(&name[start..]);
    segments.retain(|s| !s.is_empty());
    segments
}

/// The root of the user's repository: `DEVCHECK_SOURCE_ROOT`, else the nearest
/// directory above the package (or the working directory) that holds `.git`,
/// else the workspace root, else the working directory.
pub fn repository_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        if let Some(root) = std::env::var_os("DEVCHECK_SOURCE_ROOT") {
            return std::path::absolute(PathBuf::from(root)).unwrap_or_default();
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        let start = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| cwd.clone());
        if let Some(git) = start.ancestors().find(|d| d.join(".git").exists()) {
            return git.to_path_buf();
        }
        let workspace = start.ancestors().find(|d| {
            std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]"))
        });
        workspace.map_or(start.clone(), Path::to_path_buf)
    })
}

/// A debug-info path as the user's repository names it: relative, `/`-separated.
///
/// Debug info holds the absolute path of the machine that built the binary. On
/// another machine (a bundle on a GPU host) that path is found again by the
/// build root the bundle records (`DEVCHECK_BUILD_ROOT`), or by the longest
/// end of it that names a file under the repository root here.
pub fn repository_relative(path: &str) -> String {
    type Known = Mutex<HashMap<String, String>>;
    static KNOWN: OnceLock<Known> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(relative) = crate::lock(known).get(path) {
        return relative.clone();
    }
    let build_root = std::env::var_os("DEVCHECK_BUILD_ROOT").map(PathBuf::from);
    let relative = relative_to(Path::new(path), repository_root(), build_root.as_deref());
    crate::lock(known).insert(path.to_owned(), relative.clone());
    relative
}

/// `a/b/../c` → `a/c`, `./a` → `a`, without asking the file system: what
/// `include!("../src/main.rs")` and `#[path = …]` leave in debug info.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(normal.components().next_back(), Some(Component::Normal(_))) =>
            {
                normal.pop();
            }
            other => normal.push(other.as_os_str()),
        }
    }
    normal
}

fn relative_to(path: &Path, root: &Path, build_root: Option<&Path>) -> String {
    let text = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let path = &lexically_normal(path);
    if !path.is_absolute() {
        return text(path).trim_start_matches("./").to_owned();
    }
    if let Ok(inside) = path.strip_prefix(root) {
        return text(inside);
    }
    if let Some(inside) = build_root.and_then(|b| path.strip_prefix(b).ok()) {
        return text(inside);
    }
    let components: Vec<Component> = path.components().collect();
    for start in 1..components.len() {
        let tail: PathBuf = components[start..].iter().collect();
        if root.join(&tail).is_file() {
            return text(&tail);
        }
    }
    // Outside the repository (a path dependency beside it): `../` steps, never absolute.
    let path: Vec<Component> = path.components().collect();
    let root: Vec<Component> = root.components().collect();
    let shared = path.iter().zip(&root).take_while(|(a, b)| a == b).count();
    let mut relative = PathBuf::new();
    for _ in shared..root.len() {
        relative.push("..");
    }
    for component in &path[shared..] {
        relative.push(component.as_os_str());
    }
    text(&relative)
}

/// The text of a source line, where the file can be found from here.
pub fn source_line(site: &Site) -> Option<String> {
    type Files = Mutex<HashMap<String, Option<Arc<Vec<String>>>>>;
    static FILES: OnceLock<Files> = OnceLock::new();
    let files = FILES.get_or_init(Default::default);
    let lines = crate::lock(files)
        .entry(site.file.clone())
        .or_insert_with(|| {
            let root = repository_root();
            let candidates = [
                root.join(&site.file),
                std::env::current_dir().unwrap_or_default().join(&site.file),
            ];
            candidates
                .iter()
                .find_map(|p| std::fs::read_to_string(p).ok())
                .map(|text| Arc::new(text.lines().map(str::to_owned).collect()))
        })
        .clone()?;
    lines
        .get(usize::try_from(site.line).ok()?.checked_sub(1)?)
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, file: Option<&str>) -> Frame {
        Frame {
            function: Some(function.to_owned()),
            file: file.map(str::to_owned),
            line: Some(12),
            column: Some(9),
            owner: owner_of(Some(function), file),
        }
    }

    #[test]
    fn shortens_functions_to_type_and_name() {
        assert_eq!(
            short_function("<devices::Net as devcheck::case::Model>::step"),
            "Net::step"
        );
        assert_eq!(
            short_function("tch::wrappers::tensor::Tensor::double_value"),
            "Tensor::double_value"
        );
        assert_eq!(
            short_function(
                "<f64 as core::convert::TryFrom<&tch::wrappers::tensor::Tensor>>::try_from"
            ),
            "f64::try_from"
        );
        assert_eq!(
            short_function(
                "tch::wrappers::tensor_generated::<impl tch::wrappers::tensor::Tensor>::nonzero"
            ),
            "Tensor::nonzero"
        );
        assert_eq!(
            short_function("<alloc::vec::Vec<T> as core::convert::TryFrom<&tch::wrappers::tensor::Tensor>>::try_from"),
            "Vec<T>::try_from"
        );
        assert_eq!(
            short_function("tch::tensor::convert::<impl core::convert::TryFrom<&tch::wrappers::tensor::Tensor> for f64>::try_from"),
            "f64::try_from"
        );
        assert_eq!(
            short_function("tch::tensor::convert::<impl core::convert::TryFrom<&tch::wrappers::tensor::Tensor> for alloc::vec::Vec<T>>::try_from"),
            "Vec<T>::try_from"
        );
        assert_eq!(
            short_function("mycrate::train::log_loss"),
            "train::log_loss"
        );
        assert_eq!(
            short_function("mycrate::train::run::{{closure}}"),
            "train::run::{{closure}}"
        );
    }

    #[test]
    fn owners_come_from_paths_then_symbols() {
        let tch = "/home/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tch-0.24.0/src/tensor/convert.rs";
        assert_eq!(
            owner_of(Some("<f64 as x>::try_from"), Some(tch)),
            Owner::Tch
        );
        assert_eq!(
            owner_of(
                Some("_ZN2at6native19_local_scalar_denseERKNS_6TensorE"),
                None
            ),
            Owner::Native,
            "libtorch has no debug info, and its names stay mangled"
        );
        assert_eq!(
            owner_of(Some("at::native::item(at::Tensor const&)"), None),
            Owner::Native
        );
        assert_eq!(
            owner_of(
                Some("devcheck::runner::execute"),
                Some("harness/src/runner.rs")
            ),
            Owner::Devcheck
        );
        assert_eq!(
            owner_of(
                Some("<devcheck::cases::faults::UntrackedLogger as devcheck::case::Model>::step"),
                Some("harness/src/cases/faults.rs")
            ),
            Owner::User
        );
        assert_eq!(
            owner_of(
                Some("core::ops::function::FnOnce::call_once"),
                Some("/rustc/abc/library/core/src/ops/function.rs")
            ),
            Owner::Std
        );
        assert_eq!(
            owner_of(Some("x"), Some("harness/shim/observer.cpp")),
            Owner::Native
        );
        assert_eq!(
            owner_of(
                Some("<mycrate::Net as tch::nn::Module>::forward"),
                Some("src/net.rs")
            ),
            Owner::User
        );
    }

    #[test]
    fn the_site_is_the_first_user_frame_with_the_tch_call_that_led_there() {
        let tch = "/r/tch-0.24.0/src/tensor/convert.rs";
        let frames = [
            frame("at::native::_local_scalar_dense", None),
            frame(
                "tch::wrappers::tensor::Tensor::f_to_device",
                Some("/r/tch-0.24.0/src/tensor/mod.rs"),
            ),
            frame(
                "<f64 as core::convert::TryFrom<&tch::wrappers::tensor::Tensor>>::try_from",
                Some(tch),
            ),
            frame(
                "devcheck::readbacks::scalar_f64::{{closure}}",
                Some("harness/src/readbacks.rs"),
            ),
            frame(
                "devcheck::readbacks::scalar_f64",
                Some("harness/src/readbacks.rs"),
            ),
            frame(
                "<devices::Net as devcheck::case::Model>::step",
                Some("tests/devices.rs"),
            ),
            frame(
                "devcheck::trainer::Trainer::step",
                Some("harness/src/trainer.rs"),
            ),
        ];
        let call = call_site_of_frames(&frames);
        let site = call.site.unwrap();
        assert_eq!(site.to_string(), "tests/devices.rs:12:9");
        assert_eq!(site.function, "Net::step");
        assert_eq!(call.api.as_deref(), Some("f64::try_from"));
        assert_eq!(call.inner_api.as_deref(), Some("Tensor::to_device"));
        assert_eq!(call.intended.as_deref(), Some("readbacks::scalar_f64"));
    }

    #[test]
    fn a_read_by_value_is_the_read_by_reference_inside_it() {
        // `f64::try_from(x.max())`: the by-value impl calls the by-reference one,
        // whose own calls were inlined; the read has no other inner call.
        let tch = "/r/tch-0.24.0/src/tensor/convert.rs";
        let frames = [
            frame(
                "<f64 as core::convert::TryFrom<&tch::wrappers::tensor::Tensor>>::try_from",
                Some(tch),
            ),
            frame(
                "<f64 as core::convert::TryFrom<tch::wrappers::tensor::Tensor>>::try_from",
                Some(tch),
            ),
            frame("main::train_step", Some("src/main.rs")),
        ];
        let call = call_site_of_frames(&frames);
        assert_eq!(call.api.as_deref(), Some("f64::try_from"));
        assert_eq!(call.inner_api, None);
    }

    #[test]
    fn paths_are_relative_to_the_repository_never_absolute() {
        let root = Path::new("/home/u/project");
        assert_eq!(
            relative_to(Path::new("./src/lib.rs"), root, None),
            "src/lib.rs"
        );
        assert_eq!(
            relative_to(Path::new("/home/u/project/tests/devices.rs"), root, None),
            "tests/devices.rs"
        );
        assert_eq!(
            relative_to(
                Path::new("/home/u/devcheck/harness/src/cases/cnn.rs"),
                root,
                None
            ),
            "../devcheck/harness/src/cases/cnn.rs"
        );
        // A binary crate's source reached from a test with include!/#[path].
        assert_eq!(
            relative_to(
                Path::new("/home/u/project/tests/../src/main.rs"),
                root,
                None
            ),
            "src/main.rs"
        );
        assert_eq!(
            relative_to(Path::new("tests/../src/./main.rs"), root, None),
            "src/main.rs"
        );
        // Built elsewhere: the bundle's build root, or the end that exists here.
        assert_eq!(
            relative_to(
                Path::new("/build/ci/tests/devices.rs"),
                root,
                Some(Path::new("/build/ci"))
            ),
            "tests/devices.rs"
        );
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            relative_to(
                Path::new("/elsewhere/checkout/src/observer/sites.rs"),
                &here,
                None
            ),
            "src/observer/sites.rs",
            "cargo runs unit tests in the package directory"
        );
    }
}
