//! What this process runs on: backends built and available, versions, host,
//! the environment flags and precision modes that change behaviour. This is
//! what `cargo xtask doctor` prints and what every report records.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::shim::{self, Backend, BackendInfo, CudaLibrary, PrecisionFlags, ShimError};

/// The tch release series this build uses (`0.24`), the one torch-sys pairs
/// with the libtorch it linked (see build.rs).
pub const TCH_VERSION: &str = env!("DEVCHECK_TCH_SERIES");

/// The libtorch release series this build was compiled against (`2.11`).
pub const EXPECTED_LIBTORCH: &str = env!("DEVCHECK_TORCH_SERIES");

/// Environment variables that change how libtorch places, falls back or allocates.
pub const BEHAVIOUR_FLAGS: &[&str] = &[
    "PYTORCH_ENABLE_MPS_FALLBACK",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
    "PYTORCH_MPS_LOW_WATERMARK_RATIO",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "OMP_NUM_THREADS",
];

/// Built/available/count for each backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backends {
    /// The host CPU.
    pub cpu: BackendInfo,
    /// NVIDIA CUDA.
    pub cuda: BackendInfo,
    /// Apple MPS.
    pub mps: BackendInfo,
}

/// Everything doctor reports, in the shape of `doctor --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Per backend: compiled in, usable now, device count.
    pub backends: Backends,
    /// Version of the loaded libtorch (from its install), e.g. `2.11.0+cu130`.
    pub libtorch_version: String,
    /// Version of the headers devcheck's shim was compiled against.
    pub libtorch_compiled_version: String,
    /// The pinned tch version.
    pub tch_version: String,
    /// Directory of the loaded `libtorch_cpu`.
    pub libtorch_lib_dir: String,
    /// Whether `libtorch_cuda` was linked, loaded by devcheck, or is absent.
    pub cuda_library: CudaLibrary,
    /// CPU architecture of this process.
    pub arch: String,
    /// macOS: an x86_64 process translated by Rosetta (which hides MPS).
    pub rosetta: bool,
    /// Operating system.
    pub os: String,
    /// Behaviour-changing environment variables (`null` when unset).
    pub env: BTreeMap<String, Option<String>>,
    /// Float32 precision modes (TF32).
    pub precision: PrecisionFlags,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Devcheck or the user's code will misbehave.
    Error,
    /// Likely a mistake.
    Warning,
    /// Worth knowing.
    Note,
}

/// One thing doctor found, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How much it matters.
    pub severity: Severity,
    /// What is the case.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl Environment {
    /// Reads the environment of this process.
    pub fn collect() -> Result<Self, ShimError> {
        let cuda_library = crate::init()?;
        let lib_dir = shim::libtorch_lib_dir()?;
        let compiled = shim::compiled_torch_version();
        Ok(Environment {
            backends: Backends {
                cpu: shim::backend_info(Backend::Cpu)?,
                cuda: shim::backend_info(Backend::Cuda)?,
                mps: shim::backend_info(Backend::Mps)?,
            },
            libtorch_version: installed_version(&lib_dir).unwrap_or_else(|| compiled.clone()),
            libtorch_compiled_version: compiled,
            tch_version: TCH_VERSION.to_owned(),
            libtorch_lib_dir: lib_dir.display().to_string(),
            cuda_library,
            arch: std::env::consts::ARCH.to_owned(),
            rosetta: running_under_rosetta(),
            os: std::env::consts::OS.to_owned(),
            env: BEHAVIOUR_FLAGS
                .iter()
                .map(|name| (name.to_string(), std::env::var(name).ok()))
                .collect(),
            precision: shim::precision_flags()?,
        })
    }

    /// What is wrong or worth knowing, each with a fix hint.
    pub fn findings(&self) -> Vec<Finding> {
        let mut found = Vec::new();
        let mut add = |severity, message: String, hint: &str| {
            found.push(Finding {
                severity,
                message,
                hint: hint.to_owned(),
            })
        };
        if !in_series(&self.libtorch_version, EXPECTED_LIBTORCH) {
            add(
                Severity::Error,
                format!(
                    "libtorch {} is loaded, tch {} expects {EXPECTED_LIBTORCH}.x",
                    self.libtorch_version, self.tch_version
                ),
                "unset LIBTORCH / LD_LIBRARY_PATH overrides and run `cargo devcheck setup`",
            );
        }
        // Without a usable GPU the dropped library changes nothing the user sees.
        if self.cuda_library == CudaLibrary::LoadedAtRuntime && self.backends.cuda.available {
            add(
                Severity::Warning,
                "libtorch_cuda was dropped by the linker (--as-needed); devcheck loaded it at start-up"
                    .to_owned(),
                "in your own binaries' build.rs emit `cargo:rustc-link-arg=-Wl,--no-as-needed`, \
                 `-ltorch_cuda`, `-Wl,--as-needed`, or CUDA reads as unavailable without devcheck",
            );
        }
        match (self.backends.cuda.built, self.backends.cuda.available) {
            (true, false) => add(
                Severity::Note,
                "cuda is built into this libtorch but not available: no GPU or driver visible"
                    .to_owned(),
                "expected on a machine without an NVIDIA GPU; otherwise check `nvidia-smi` and CUDA_VISIBLE_DEVICES",
            ),
            (false, _) if self.os == "linux" || self.os == "windows" => add(
                Severity::Note,
                "cuda is not built into this libtorch (a CPU-only build)".to_owned(),
                "for CUDA, provision the default torch wheel (unset DEVCHECK_TORCH_INDEX_URL)",
            ),
            _ => {}
        }
        if self.rosetta {
            add(
                Severity::Error,
                "this is an x86_64 process under Rosetta: MPS is invisible to it".to_owned(),
                "use the native toolchain: `rustup default stable-aarch64-apple-darwin`, then rebuild",
            );
        }
        if self.os == "macos" && !self.backends.mps.built {
            add(
                Severity::Warning,
                "mps is not built into this libtorch".to_owned(),
                "provision the macOS arm64 torch wheel (`cargo xtask setup` on a native arm64 toolchain)",
            );
        }
        if self.backends.mps.available
            && self
                .env
                .get("PYTORCH_ENABLE_MPS_FALLBACK")
                .cloned()
                .flatten()
                .as_deref()
                != Some("1")
        {
            add(
                Severity::Note,
                "PYTORCH_ENABLE_MPS_FALLBACK is not 1: operators MPS lacks raise instead of running on the CPU"
                    .to_owned(),
                "the matrix sets it for its own runs; set it yourself to see the same behaviour",
            );
        }
        if self.precision.any_reduced() && self.backends.cuda.available {
            add(
                Severity::Note,
                format!(
                    "reduced float32 precision is on (matmul tf32 {}, cudnn conv tf32 {}, cudnn rnn tf32 {}, matmul precision {})",
                    on_off(self.precision.cuda_matmul_tf32),
                    on_off(self.precision.cudnn_conv_tf32),
                    on_off(self.precision.cudnn_rnn_tf32),
                    self.precision.float32_matmul_precision
                ),
                "float32 results on CUDA differ from the CPU beyond float32 tolerances; the tolerance check says so",
            );
        }
        found
    }

    /// The short human table `cargo xtask doctor` prints.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let yes = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(
            out,
            "libtorch  {} at {}",
            self.libtorch_version, self.libtorch_lib_dir
        );
        let _ = writeln!(
            out,
            "tch       {} (shim compiled against libtorch {})",
            self.tch_version, self.libtorch_compiled_version
        );
        let translated = if self.rosetta { " (Rosetta)" } else { "" };
        let _ = writeln!(out, "host      {} {}{translated}", self.os, self.arch);
        let _ = writeln!(out);
        let _ = writeln!(out, "backend  built  available  devices");
        for (name, info) in [
            ("cpu", self.backends.cpu),
            ("cuda", self.backends.cuda),
            ("mps", self.backends.mps),
        ] {
            let _ = writeln!(
                out,
                "{name:<8} {:<6} {:<10} {}",
                yes(info.built),
                yes(info.available),
                info.device_count
            );
        }
        let _ = writeln!(out);
        let set: Vec<String> = self
            .env
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v}")))
            .collect();
        let _ = writeln!(
            out,
            "env       {}",
            if set.is_empty() {
                "no behaviour flags set".to_owned()
            } else {
                set.join(" ")
            }
        );
        let _ = writeln!(
            out,
            "float32   matmul tf32 {}, cudnn conv tf32 {}, cudnn rnn tf32 {}, matmul precision {}",
            on_off(self.precision.cuda_matmul_tf32),
            on_off(self.precision.cudnn_conv_tf32),
            on_off(self.precision.cudnn_rnn_tf32),
            self.precision.float32_matmul_precision
        );
        let findings = self.findings();
        if !findings.is_empty() {
            let _ = writeln!(out);
        }
        for finding in findings {
            let label = match finding.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Note => "note",
            };
            let _ = writeln!(out, "{label}: {}", finding.message);
            let _ = writeln!(out, "  = help: {}", finding.hint);
        }
        out
    }
}

fn on_off(flag: bool) -> &'static str {
    if flag {
        "on"
    } else {
        "off"
    }
}

/// The version of the libtorch install around `lib_dir`: a pip wheel's
/// `torch/version.py` or a libtorch archive's `build-version`.
fn installed_version(lib_dir: &Path) -> Option<String> {
    let root = lib_dir.parent()?;
    if let Ok(text) = std::fs::read_to_string(root.join("version.py")) {
        let version = text.lines().find_map(|line| {
            let value = line.strip_prefix("__version__")?.split_once('=')?.1.trim();
            Some(value.trim_matches(|c| c == '\'' || c == '"').to_owned())
        });
        if version.is_some() {
            return version;
        }
    }
    std::fs::read_to_string(root.join("build-version"))
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

#[cfg(target_os = "macos")]
fn running_under_rosetta() -> bool {
    let mut translated: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: the name is NUL-terminated; out-pointers are valid for their sizes.
    let rc = unsafe {
        libc::sysctlbyname(
            c"sysctl.proc_translated".as_ptr(),
            (&mut translated as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0 && translated == 1
}

#[cfg(not(target_os = "macos"))]
fn running_under_rosetta() -> bool {
    false
}

/// Whether `version` (`2.11.0+cu130`) is a release of `series` (`2.11`).
fn in_series(version: &str, series: &str) -> bool {
    version
        .strip_prefix(series)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('+'))
}

/// The commit under test: `DEVCHECK_GIT_COMMIT` (set but empty: unknown, as
/// a bundle built outside git says), else `git rev-parse HEAD` here.
pub(crate) fn git_commit() -> Option<String> {
    if let Ok(commit) = std::env::var("DEVCHECK_GIT_COMMIT") {
        let commit = commit.trim();
        return (!commit.is_empty()).then(|| commit.to_owned());
    }
    let output = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !commit.is_empty()).then_some(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_version_of_a_pip_install() {
        let dir = std::env::temp_dir().join(format!("devcheck-version-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(
            dir.join("version.py"),
            "x = 1\n__version__ = '2.11.0+cu130'\n",
        )
        .unwrap();
        assert_eq!(
            installed_version(&dir.join("lib")).as_deref(),
            Some("2.11.0+cu130")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_process_has_cpu_and_the_pinned_libtorch() {
        let env = Environment::collect().unwrap();
        assert_eq!(
            env.backends.cpu,
            BackendInfo {
                built: true,
                available: true,
                device_count: 1
            }
        );
        assert!(
            env.libtorch_version.starts_with("2.11."),
            "{}",
            env.libtorch_version
        );
        // This workspace's lockfile holds tch 0.24, the release for libtorch 2.11.
        assert_eq!(env.tch_version, "0.24");
        assert!(Path::new(&env.libtorch_lib_dir)
            .join(lib_name("torch_cpu"))
            .exists());
        let json = serde_json::to_value(&env).unwrap();
        for key in [
            "libtorch_version",
            "tch_version",
            "libtorch_lib_dir",
            "arch",
            "os",
            "env",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["backends"]["mps"]["device_count"], 0);
    }

    #[test]
    fn a_dropped_libtorch_cuda_is_a_warning_only_where_cuda_can_run() {
        let mut env = Environment::collect().unwrap();
        env.cuda_library = CudaLibrary::LoadedAtRuntime;
        env.backends.cuda.available = false;
        let dropped = |env: &Environment| {
            env.findings().iter().any(|f| {
                f.message
                    .starts_with("libtorch_cuda was dropped by the linker")
            })
        };
        assert!(!dropped(&env));
        env.backends.cuda.available = true;
        assert!(dropped(&env));
    }

    #[test]
    fn versions_are_matched_by_release_series() {
        assert!(in_series("2.11.0+cu130", "2.11"));
        assert!(in_series("2.1.2", "2.1"));
        assert!(!in_series("2.11.0", "2.1"));
        assert!(!in_series("2.1", "2.11"));
    }

    #[test]
    fn a_mismatched_libtorch_is_an_error_with_a_fix() {
        let mut env = Environment::collect().unwrap();
        env.libtorch_version = "2.4.0".into();
        let finding = env
            .findings()
            .into_iter()
            .find(|f| f.severity == Severity::Error)
            .unwrap();
        assert!(
            finding.message.contains("libtorch 2.4.0 is loaded"),
            "{}",
            finding.message
        );
        assert!(finding.hint.contains("cargo devcheck setup"));
    }

    fn lib_name(stem: &str) -> String {
        format!(
            "{}{stem}{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        )
    }
}
