//! Finds or provisions the libtorch that the workspace's tch needs, and gives
//! the environment that child builds and binaries need to use it.
//!
//! The tch release is the user's: [`Wanted::of_workspace`] reads the torch-sys
//! the workspace's lockfile resolved and the libtorch release its build script
//! accepts (`const TORCH_VERSION`), so a new tch release needs no change here.
//! Order: `LIBTORCH` (or `LIBTORCH_USE_PYTORCH`) if set, refused when it is not
//! that release; else a `python3` (or `DEVCHECK_PYTHON`) whose torch is; else a
//! venv per release in the user cache dir, shared by every clone, created once
//! with `pip install torch==X`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use cargo_metadata::MetadataCommand;

/// The libtorch release a workspace's tch needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The tch (torch-sys) release the workspace resolved, e.g. `0.24.0`.
    pub tch: String,
    /// The libtorch release that torch-sys accepts, e.g. `2.11.0`.
    pub torch: String,
}

impl Wanted {
    /// What the workspace of `manifest_path` (else of the working directory)
    /// resolved: its torch-sys and the libtorch release that torch-sys builds with.
    pub fn of_workspace(manifest_path: Option<&Path>) -> Result<Wanted> {
        let mut command = MetadataCommand::new();
        if let Some(path) = manifest_path {
            command.manifest_path(path);
        }
        let metadata = command
            .exec()
            .context("`cargo metadata` failed: is this inside a cargo project?")?;
        let torch_sys = metadata
            .packages
            .iter()
            .find(|package| package.name.as_str() == "torch-sys")
            .with_context(|| {
                format!(
                    "the workspace at {} does not depend on tch: add `tch` to a package's \
                     [dependencies] (devcheck serves tch 0.13 to 0.26)",
                    metadata.workspace_root
                )
            })?;
        let dir = torch_sys
            .manifest_path
            .parent()
            .expect("a manifest is in a directory");
        Wanted::of_torch_sys(&torch_sys.version.to_string(), dir.as_std_path())
    }

    /// The libtorch release a torch-sys source directory builds with.
    pub fn of_torch_sys(version: &str, dir: &Path) -> Result<Wanted> {
        let build_script = dir.join("build.rs");
        let text = fs::read_to_string(&build_script)
            .with_context(|| format!("cannot read {}", build_script.display()))?;
        let torch = text
            .lines()
            .find_map(|line| {
                let value = line.trim().strip_prefix("const TORCH_VERSION: &str =")?;
                Some(
                    value
                        .trim()
                        .trim_end_matches(';')
                        .trim_matches('"')
                        .to_owned(),
                )
            })
            .filter(|torch| !torch.is_empty())
            .with_context(|| {
                format!(
                    "torch-sys {version} names no libtorch release (`const TORCH_VERSION`) in {}",
                    build_script.display()
                )
            })?;
        Ok(Wanted {
            tch: version.to_owned(),
            torch,
        })
    }

    /// The release series, `2.11` for `2.11.0`.
    pub fn series(&self) -> &str {
        series_of(&self.torch)
    }

    /// Whether an installed version (`2.11.0+cu130`) is of the wanted series.
    pub fn accepts(&self, version: &str) -> bool {
        let release = version.split('+').next().unwrap_or(version);
        series_of(release) == self.series()
    }
}

/// `2.11` of `2.11.0` (and of `2.11`).
fn series_of(release: &str) -> &str {
    match release.match_indices('.').nth(1) {
        Some((end, _)) => &release[..end],
        None => release,
    }
}

/// Where a libtorch install came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The `LIBTORCH` environment variable.
    EnvVar,
    /// The torch package of an existing Python.
    Python(PathBuf),
    /// devcheck's own venv in the user cache dir.
    CachedVenv(PathBuf),
}

/// A usable libtorch: a directory with `include/` and `lib/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Libtorch {
    /// The directory holding `include/` and `lib/` (for a pip install, the `torch` package).
    pub root: PathBuf,
    /// Its version, e.g. `2.11.0+cu130`.
    pub version: String,
    /// Where it came from.
    pub source: Source,
    /// Whether it was built with the C++11 string ABI (the pip wheels before
    /// 2.7 were not); `None` where its `libc10` does not say.
    pub cxx11_abi: Option<bool>,
}

impl Libtorch {
    /// The directory of the shared libraries.
    pub fn lib_dir(&self) -> PathBuf {
        self.root.join("lib")
    }

    /// The one line `setup` prints.
    pub fn describe(&self) -> String {
        let from = match &self.source {
            Source::EnvVar => "LIBTORCH".to_owned(),
            Source::Python(python) => format!("the torch package of {}", python.display()),
            Source::CachedVenv(venv) => format!("devcheck's cached venv {}", venv.display()),
        };
        format!(
            "devcheck: libtorch {} from {from} ({})",
            self.version,
            self.lib_dir().display()
        )
    }

    /// Environment for child cargo and the binaries it builds: torch-sys finds
    /// libtorch through `LIBTORCH`, the loader through the library path.
    pub fn child_env(&self) -> Vec<(&'static str, Option<OsString>)> {
        let lib = self.lib_dir();
        let mut env = vec![
            ("LIBTORCH", Some(self.root.clone().into_os_string())),
            ("LIBTORCH_USE_PYTORCH", None),
            ("LIBTORCH_INCLUDE", None),
            ("LIBTORCH_LIB", None),
        ];
        // torch-sys compiles its C++ with this ABI; it must be the library's.
        match self.cxx11_abi {
            Some(abi) => env.push((
                "LIBTORCH_CXX11_ABI",
                Some(if abi { "1" } else { "0" }.into()),
            )),
            None if std::env::var_os("LIBTORCH_CXX11_ABI").is_none() => {
                env.push(("LIBTORCH_CXX11_ABI", Some("1".into())))
            }
            None => {}
        }
        let var = if cfg!(target_os = "macos") {
            "DYLD_LIBRARY_PATH"
        } else {
            "LD_LIBRARY_PATH"
        };
        env.push((var, Some(prepend_path(&lib, std::env::var_os(var)))));
        env
    }

    /// Applies [`Libtorch::child_env`] to a command.
    pub fn apply(&self, command: &mut Command) {
        for (key, value) in self.child_env() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
    }
}

fn prepend_path(dir: &Path, existing: Option<OsString>) -> OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(existing) = existing {
        paths.extend(std::env::split_paths(&existing).filter(|p| p != dir));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// Finds the libtorch `wanted` names, provisioning the cached venv if nothing else fits.
pub fn ensure(wanted: &Wanted) -> Result<Libtorch> {
    if let Some(root) = std::env::var_os("LIBTORCH") {
        return from_env_var(PathBuf::from(root), wanted);
    }
    let python = std::env::var_os("DEVCHECK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"));
    if std::env::var_os("LIBTORCH_USE_PYTORCH").is_some() {
        return from_python(&python, wanted);
    }
    if let Some(found) = python_install(&python) {
        if wanted.accepts(&found.version) {
            return Ok(found);
        }
    }
    cached_venv(&python, wanted)
}

/// The torch of a Python, as a libtorch, if it has one with libraries.
fn python_install(python: &Path) -> Option<Libtorch> {
    let root = torch_package_of(python)?;
    let version = version_of(&root)?;
    has_libraries(&root).then(|| Libtorch {
        cxx11_abi: cxx11_abi(&root.join("lib")),
        root,
        version,
        source: Source::Python(python.to_path_buf()),
    })
}

/// `LIBTORCH_USE_PYTORCH`: the Python's torch, which must be the wanted release.
fn from_python(python: &Path, wanted: &Wanted) -> Result<Libtorch> {
    let found = python_install(python).with_context(|| {
        format!(
            "LIBTORCH_USE_PYTORCH is set, but `{}` has no torch with libraries: \
             unset LIBTORCH_USE_PYTORCH to let devcheck provision libtorch {}",
            python.display(),
            wanted.torch
        )
    })?;
    if !wanted.accepts(&found.version) {
        bail!(
            "LIBTORCH_USE_PYTORCH is set and `{}` has torch {}, but this workspace's tch {} needs \
             libtorch {}: unset LIBTORCH_USE_PYTORCH to let devcheck provision it, or \
             `pip install torch=={}` in that Python",
            python.display(),
            found.version,
            wanted.tch,
            wanted.torch,
            wanted.torch
        );
    }
    Ok(found)
}

fn from_env_var(root: PathBuf, wanted: &Wanted) -> Result<Libtorch> {
    if !has_libraries(&root) {
        bail!(
            "LIBTORCH={} has no lib/{} — point it at a libtorch directory (with include/ and lib/), \
             or unset it to let devcheck provision libtorch {}",
            root.display(),
            library_file("torch_cpu"),
            wanted.torch
        );
    }
    let version = version_of(&root).unwrap_or_else(|| "unknown".to_owned());
    if version != "unknown" && !wanted.accepts(&version) {
        bail!(
            "LIBTORCH={} is libtorch {version}, but this workspace's tch {} needs libtorch {}: \
             unset LIBTORCH to let devcheck provision it (or point LIBTORCH at a libtorch {})",
            root.display(),
            wanted.tch,
            wanted.torch,
            wanted.series()
        );
    }
    Ok(Libtorch {
        cxx11_abi: cxx11_abi(&root.join("lib")),
        root,
        version,
        source: Source::EnvVar,
    })
}

/// Whether the libtorch in `lib_dir` was built with the C++11 string ABI, read
/// from how `c10::Error`'s constructor is mangled in its `libc10`.
pub fn cxx11_abi(lib_dir: &Path) -> Option<bool> {
    let bytes = fs::read(lib_dir.join(library_file("c10"))).ok()?;
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|window| window == needle);
    if has(b"_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx11") {
        Some(true)
    } else if has(b"_ZN3c105ErrorC1ENS_14SourceLocationESs") {
        Some(false)
    } else {
        None
    }
}

fn has_libraries(root: &Path) -> bool {
    root.join("lib").join(library_file("torch_cpu")).is_file() && root.join("include").is_dir()
}

fn library_file(stem: &str) -> String {
    format!(
        "{}{stem}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The version recorded by a pip install (`version.py`) or a libtorch archive (`build-version`).
pub fn version_of(root: &Path) -> Option<String> {
    if let Ok(text) = fs::read_to_string(root.join("version.py")) {
        let found = text.lines().find_map(|line| {
            let value = line.strip_prefix("__version__")?.split_once('=')?.1.trim();
            Some(value.trim_matches(|c| c == '\'' || c == '"').to_owned())
        });
        if found.is_some() {
            return found;
        }
    }
    let text = fs::read_to_string(root.join("build-version")).ok()?;
    Some(text.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The `torch` package directory of a Python, found without importing torch (fast).
fn torch_package_of(python: &Path) -> Option<PathBuf> {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('torch'); \
             print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let path = text.trim();
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// devcheck's cache directory: `DEVCHECK_CACHE_DIR`, else the user cache dir.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("DEVCHECK_CACHE_DIR") {
        return Ok(PathBuf::from(dir));
    }
    let base =
        dirs::cache_dir().context("no user cache directory: set DEVCHECK_CACHE_DIR or LIBTORCH")?;
    Ok(base.join("devcheck"))
}

/// Marker written once the venv's install has completed; holds the torch root.
const READY_MARKER: &str = "devcheck-ready";

fn cached_venv(python: &Path, wanted: &Wanted) -> Result<Libtorch> {
    let cache = cache_dir()?;
    let torch = &wanted.torch;
    let venv = cache.join(format!("torch-{torch}"));
    if let Some(found) = ready_venv(&venv, wanted) {
        return Ok(found);
    }
    fs::create_dir_all(&cache)
        .with_context(|| format!("cannot create the cache directory {}", cache.display()))?;
    // Several clones or CI jobs may provision at once: one installs, the others wait.
    let lock_path = cache.join(format!("torch-{torch}.lock"));
    let lock = fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
    if let Some(found) = ready_venv(&venv, wanted) {
        return Ok(found);
    }
    install_venv(python, &venv, wanted)?;
    ready_venv(&venv, wanted).with_context(|| {
        format!(
            "pip finished but {} holds no usable torch {torch}",
            venv.display()
        )
    })
}

fn ready_venv(venv: &Path, wanted: &Wanted) -> Option<Libtorch> {
    let root = PathBuf::from(fs::read_to_string(venv.join(READY_MARKER)).ok()?.trim());
    let version = version_of(&root)?;
    (wanted.accepts(&version) && has_libraries(&root)).then(|| Libtorch {
        cxx11_abi: cxx11_abi(&root.join("lib")),
        root,
        version,
        source: Source::CachedVenv(venv.to_path_buf()),
    })
}

fn install_venv(python: &Path, venv: &Path, wanted: &Wanted) -> Result<()> {
    let torch = &wanted.torch;
    if venv.exists() {
        // An interrupted earlier install: start over rather than trust it.
        fs::remove_dir_all(venv)
            .with_context(|| format!("cannot remove the incomplete venv {}", venv.display()))?;
    }
    eprintln!(
        "devcheck: provisioning libtorch {torch} for tch {}: pip install torch=={torch} into {} (once per machine and release)",
        wanted.tch,
        venv.display()
    );
    run(
        Command::new(python).arg("-m").arg("venv").arg(venv),
        "create the venv",
    )
    .with_context(|| {
        format!(
            "is `{}` a Python 3 with the venv module? set DEVCHECK_PYTHON to choose another",
            python.display()
        )
    })?;
    let venv_python = venv.join(if cfg!(windows) {
        "Scripts/python.exe"
    } else {
        "bin/python"
    });
    let mut pip = Command::new(&venv_python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
    ]);
    if let Some(index) = std::env::var_os("DEVCHECK_TORCH_INDEX_URL") {
        pip.arg("--index-url").arg(index);
    }
    pip.arg(format!("torch=={torch}"));
    run(&mut pip, "pip install torch").with_context(|| {
        format!(
            "pip found no torch {torch} for `{}`: check that PyPI serves torch {torch} for that \
             Python's version (DEVCHECK_PYTHON chooses another Python), set \
             DEVCHECK_TORCH_INDEX_URL for another package index, or LIBTORCH to use an existing \
             libtorch {}",
            python.display(),
            wanted.series()
        )
    })?;
    let root = torch_package_of(&venv_python)
        .with_context(|| format!("torch is not importable from {}", venv_python.display()))?;
    fs::write(venv.join(READY_MARKER), root.display().to_string())
        .with_context(|| format!("cannot write {}", venv.join(READY_MARKER).display()))?;
    Ok(())
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("cannot {what}: failed to start {:?}", command.get_program()))?;
    if !status.success() {
        bail!(
            "cannot {what}: {:?} exited with {status}",
            command.get_program()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_install(dir: &Path, version_py: &str) {
        fs::create_dir_all(dir.join("lib")).unwrap();
        fs::create_dir_all(dir.join("include")).unwrap();
        fs::write(dir.join("lib").join(library_file("torch_cpu")), b"").unwrap();
        fs::write(dir.join("version.py"), version_py).unwrap();
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn wanted(tch: &str, torch: &str) -> Wanted {
        Wanted {
            tch: tch.into(),
            torch: torch.into(),
        }
    }

    #[test]
    fn accepts_releases_of_the_wanted_series_with_local_tags() {
        let tch_0_24 = wanted("0.24.0", "2.11.0");
        assert!(tch_0_24.accepts("2.11.0"));
        assert!(tch_0_24.accepts("2.11.0+cu130"));
        assert!(tch_0_24.accepts("2.11.1+cpu"));
        assert!(!tch_0_24.accepts("2.1.0"));
        assert!(!tch_0_24.accepts("2.10.0"));
        assert!(!tch_0_24.accepts("2.110.0"));
        let tch_0_13 = wanted("0.13.0", "2.0.0");
        assert!(tch_0_13.accepts("2.0.1+cu117"));
        assert!(!tch_0_13.accepts("2.11.0"));
    }

    #[test]
    fn the_wanted_release_is_read_from_torch_sys_build_script() {
        let dir = temp("torch-sys");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("build.rs"),
            "use std::path::PathBuf;\n\nconst TORCH_VERSION: &str = \"2.0.0\";\nconst PYTHON_PRINT: &str = \"\";\n",
        )
        .unwrap();
        assert_eq!(
            Wanted::of_torch_sys("0.13.0", &dir).unwrap(),
            wanted("0.13.0", "2.0.0")
        );
        fs::write(dir.join("build.rs"), "fn main() {}\n").unwrap();
        let error = Wanted::of_torch_sys("0.99.0", &dir)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("torch-sys 0.99.0 names no libtorch release"),
            "{error}"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn this_workspace_wants_the_libtorch_of_its_locked_tch() {
        // devcheck's own lockfile holds tch 0.24, whose torch-sys builds with 2.11.0.
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let found = Wanted::of_workspace(Some(&manifest)).unwrap();
        assert_eq!(found, wanted("0.24.0", "2.11.0"));
        assert_eq!(found.series(), "2.11");
    }

    #[test]
    fn the_string_abi_is_read_from_libc10() {
        let dir = temp("abi");
        fs::create_dir_all(&dir).unwrap();
        let lib = dir.join(library_file("c10"));
        fs::write(&lib, b"\0_ZN3c105ErrorC1ENS_14SourceLocationESs\0").unwrap();
        assert_eq!(cxx11_abi(&dir), Some(false));
        fs::write(
            &lib,
            b"\0_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcEE\0",
        )
        .unwrap();
        assert_eq!(cxx11_abi(&dir), Some(true));
        fs::write(&lib, b"nothing").unwrap();
        assert_eq!(cxx11_abi(&dir), None);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn reads_versions_of_pip_and_archive_installs() {
        let pip = temp("pip");
        fake_install(&pip, "__all__ = []\n__version__ = '2.11.0+cu130'\n");
        assert_eq!(version_of(&pip).as_deref(), Some("2.11.0+cu130"));
        let archive = temp("archive");
        fs::create_dir_all(&archive).unwrap();
        fs::write(archive.join("build-version"), "2.11.0+cpu\n").unwrap();
        assert_eq!(version_of(&archive).as_deref(), Some("2.11.0+cpu"));
        fs::remove_dir_all(pip).unwrap();
        fs::remove_dir_all(archive).unwrap();
    }

    #[test]
    fn libtorch_env_var_of_the_wrong_version_is_refused_with_a_fix() {
        let dir = temp("old");
        fake_install(&dir, "__version__ = '2.4.1'\n");
        let error = from_env_var(dir.clone(), &wanted("0.24.0", "2.11.0"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "is libtorch 2.4.1, but this workspace's tch 0.24.0 needs libtorch 2.11.0"
            ),
            "{error}"
        );
        assert!(error.contains("unset LIBTORCH"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn libtorch_env_var_without_libraries_is_refused() {
        let dir = temp("empty");
        fs::create_dir_all(&dir).unwrap();
        let error = from_env_var(dir.clone(), &wanted("0.24.0", "2.11.0"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("has no lib/"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_venv_without_its_ready_marker_is_not_used() {
        let venv = temp("venv");
        let torch = venv.join("lib/python3/site-packages/torch");
        fake_install(&torch, "__version__ = '2.11.0'\n");
        let tch_0_24 = wanted("0.24.0", "2.11.0");
        assert_eq!(ready_venv(&venv, &tch_0_24), None);
        fs::write(venv.join(READY_MARKER), torch.display().to_string()).unwrap();
        assert_eq!(ready_venv(&venv, &wanted("0.13.0", "2.0.0")), None);
        let found = ready_venv(&venv, &tch_0_24).unwrap();
        assert_eq!(found.root, torch);
        assert_eq!(found.version, "2.11.0");
        fs::remove_dir_all(venv).unwrap();
    }

    #[test]
    fn child_env_points_torch_sys_and_the_loader_at_the_install() {
        let torch = Libtorch {
            root: PathBuf::from("/opt/torch"),
            version: "2.11.0".into(),
            source: Source::EnvVar,
            cxx11_abi: Some(false),
        };
        let env = torch.child_env();
        let get = |key: &str| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone());
        assert_eq!(get("LIBTORCH"), Some(Some("/opt/torch".into())));
        assert_eq!(get("LIBTORCH_USE_PYTORCH"), Some(None));
        assert_eq!(get("LIBTORCH_CXX11_ABI"), Some(Some("0".into())));
        let loader = if cfg!(target_os = "macos") {
            "DYLD_LIBRARY_PATH"
        } else {
            "LD_LIBRARY_PATH"
        };
        let path = get(loader).flatten().unwrap();
        assert_eq!(
            std::env::split_paths(&path).next(),
            Some(PathBuf::from("/opt/torch/lib"))
        );
    }
}
