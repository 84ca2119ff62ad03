//! Finds or provisions the libtorch that tch 0.24 needs (2.11.x), and gives the
//! environment that child builds and binaries need to use it.
//!
//! Order: `LIBTORCH` if set; else a `python3` (or `DEVCHECK_PYTHON`) whose torch
//! is 2.11; else a venv in the user cache dir, shared by every clone, created
//! once with `pip install torch==2.11.0`.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The libtorch release tch 0.24 is built for.
pub const TORCH_VERSION: &str = "2.11.0";

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
        if std::env::var_os("LIBTORCH_CXX11_ABI").is_none() {
            env.push(("LIBTORCH_CXX11_ABI", Some("1".into())));
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

/// Finds libtorch, provisioning the cached venv if nothing else fits.
pub fn ensure() -> Result<Libtorch> {
    if let Some(root) = std::env::var_os("LIBTORCH") {
        return from_env_var(PathBuf::from(root));
    }
    let python = std::env::var_os("DEVCHECK_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"));
    if let Some(root) = torch_package_of(&python) {
        if let Some(version) = version_of(&root) {
            if is_wanted(&version) && has_libraries(&root) {
                return Ok(Libtorch {
                    root,
                    version,
                    source: Source::Python(python),
                });
            }
        }
    }
    cached_venv(&python)
}

fn from_env_var(root: PathBuf) -> Result<Libtorch> {
    if !has_libraries(&root) {
        bail!(
            "LIBTORCH={} has no lib/{} — point it at a libtorch directory (with include/ and lib/), \
             or unset it to let devcheck provision libtorch {TORCH_VERSION}",
            root.display(),
            library_file("torch_cpu")
        );
    }
    let version = version_of(&root).unwrap_or_else(|| "unknown".to_owned());
    if version != "unknown" && !is_wanted(&version) {
        bail!(
            "LIBTORCH={} is libtorch {version}, but tch 0.24 needs {TORCH_VERSION}: \
             unset LIBTORCH to let devcheck provision it",
            root.display()
        );
    }
    Ok(Libtorch {
        root,
        version,
        source: Source::EnvVar,
    })
}

/// Whether a version string is a 2.11 release (local tags such as `+cu130` allowed).
pub fn is_wanted(version: &str) -> bool {
    let release = version.split('+').next().unwrap_or(version);
    let wanted_minor = TORCH_VERSION
        .rsplit_once('.')
        .map(|(minor, _)| minor)
        .unwrap_or(TORCH_VERSION);
    release == wanted_minor || release.starts_with(&format!("{wanted_minor}."))
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

fn cached_venv(python: &Path) -> Result<Libtorch> {
    let cache = cache_dir()?;
    let venv = cache.join(format!("torch-{TORCH_VERSION}"));
    if let Some(found) = ready_venv(&venv) {
        return Ok(found);
    }
    fs::create_dir_all(&cache)
        .with_context(|| format!("cannot create the cache directory {}", cache.display()))?;
    // Several clones or CI jobs may provision at once: one installs, the others wait.
    let lock_path = cache.join(format!("torch-{TORCH_VERSION}.lock"));
    let lock = fs::File::create(&lock_path)
        .with_context(|| format!("cannot create {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("cannot lock {}", lock_path.display()))?;
    if let Some(found) = ready_venv(&venv) {
        return Ok(found);
    }
    install_venv(python, &venv)?;
    ready_venv(&venv).with_context(|| {
        format!(
            "pip finished but {} holds no usable torch {TORCH_VERSION}",
            venv.display()
        )
    })
}

fn ready_venv(venv: &Path) -> Option<Libtorch> {
    let root = PathBuf::from(fs::read_to_string(venv.join(READY_MARKER)).ok()?.trim());
    let version = version_of(&root)?;
    (is_wanted(&version) && has_libraries(&root)).then(|| Libtorch {
        root,
        version,
        source: Source::CachedVenv(venv.to_path_buf()),
    })
}

fn install_venv(python: &Path, venv: &Path) -> Result<()> {
    if venv.exists() {
        // An interrupted earlier install: start over rather than trust it.
        fs::remove_dir_all(venv)
            .with_context(|| format!("cannot remove the incomplete venv {}", venv.display()))?;
    }
    eprintln!(
        "devcheck: provisioning libtorch {TORCH_VERSION}: pip install torch=={TORCH_VERSION} into {} (once per machine)",
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
    pip.arg(format!("torch=={TORCH_VERSION}"));
    run(&mut pip, "pip install torch").context(
        "set DEVCHECK_TORCH_INDEX_URL for another package index, or LIBTORCH to use an existing libtorch",
    )?;
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

    #[test]
    fn accepts_2_11_releases_with_local_tags_only() {
        assert!(is_wanted("2.11.0"));
        assert!(is_wanted("2.11.0+cu130"));
        assert!(is_wanted("2.11.1+cpu"));
        assert!(!is_wanted("2.1.0"));
        assert!(!is_wanted("2.10.0"));
        assert!(!is_wanted("2.110.0"));
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
        let error = from_env_var(dir.clone()).unwrap_err().to_string();
        assert!(
            error.contains("is libtorch 2.4.1, but tch 0.24 needs 2.11.0"),
            "{error}"
        );
        assert!(error.contains("unset LIBTORCH"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn libtorch_env_var_without_libraries_is_refused() {
        let dir = temp("empty");
        fs::create_dir_all(&dir).unwrap();
        let error = from_env_var(dir.clone()).unwrap_err().to_string();
        assert!(error.contains("has no lib/"), "{error}");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_venv_without_its_ready_marker_is_not_used() {
        let venv = temp("venv");
        let torch = venv.join("lib/python3/site-packages/torch");
        fake_install(&torch, "__version__ = '2.11.0'\n");
        assert_eq!(ready_venv(&venv), None);
        fs::write(venv.join(READY_MARKER), torch.display().to_string()).unwrap();
        let found = ready_venv(&venv).unwrap();
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
        };
        let env = torch.child_env();
        let get = |key: &str| env.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone());
        assert_eq!(get("LIBTORCH"), Some(Some("/opt/torch".into())));
        assert_eq!(get("LIBTORCH_USE_PYTORCH"), Some(None));
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
