//! A bundle: the matrix as a folder that runs where there is no cargo (a GPU
//! host, a Mac without Rust). It holds the targets' release binaries (linked
//! so that `libtorch_cuda` is kept, their line tables compressed so the op
//! observer still names the user's lines), their reviewed snapshots, a
//! `cargo-devcheck` to run them and join their reports, and a `run.sh` that
//! finds the host's libtorch and hands over to it:
//!
//! ```text
//! bundle/
//!   run.sh  cargo-devcheck  TARGETS  BUILD_ROOT  COMMIT
//!   bin/<package>-<target>
//!   snapshots/<package>-<target>/readbacks__<case>.snap
//! ```
//!
//! `cargo devcheck bundle` makes one of a repository's targets, `cargo xtask
//! gpu-bundle` of devcheck's built-in cases.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::project::{Built, Target, TargetKind};

/// Largest bundle of devcheck's built-in cases (`cargo xtask gpu-bundle`
/// checks it: the GPU host it is validated on takes 64 MiB at most).
pub const MAX_BYTES: u64 = 60 * 1024 * 1024;

/// The launcher: finds libtorch (`DEVCHECK_LIBTORCH_LIB`, else python3's
/// torch), sets the loader path, and hands over to the bundle's cargo-devcheck.
pub const RUN_SH: &str = r#"#!/usr/bin/env bash
# devcheck bundle launcher: runs the device matrix where there is no cargo.
#   ./run.sh [--report PATH] [--faults] [--device D] [FILTER] [test binary options]
#   ./run.sh doctor [--json]
#   ./run.sh sweep --case NAME [--device D] [--epochs N] [--out DIR]
#   ./run.sh observer-cost [--device D] [--ms N] [--batch-multiplier N]
#   ./run.sh cases
#   ./run.sh compare EXPECTED.safetensors ACTUAL.safetensors [--json] [--rtol R --atol A]
#   ./run.sh merge A.json B.json --out M.json [--summary markdown]
# libtorch: DEVCHECK_LIBTORCH_LIB, else the lib dir of python3's torch package.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "${1:-}" in
  compare|merge|summary)
    exec "$here/cargo-devcheck" devcheck "$@"
    ;;
esac
lib="${DEVCHECK_LIBTORCH_LIB:-}"
if [ -z "$lib" ]; then
  lib="$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)"
fi
if [ -z "$lib" ] || [ ! -d "$lib" ]; then
  echo "run.sh: no libtorch found: set DEVCHECK_LIBTORCH_LIB to the directory holding libtorch_cpu, or install for python3 the torch release this bundle was built with" >&2
  exit 2
fi
export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DYLD_LIBRARY_PATH="$lib${DYLD_LIBRARY_PATH:+:$DYLD_LIBRARY_PATH}"
export PYTORCH_ENABLE_MPS_FALLBACK=1
if [ -z "${DEVCHECK_GIT_COMMIT:-}" ] && [ -f "$here/COMMIT" ]; then
  export DEVCHECK_GIT_COMMIT="$(cat "$here/COMMIT")"
fi
# Source paths in the binaries' debug info are the build machine's.
if [ -z "${DEVCHECK_BUILD_ROOT:-}" ] && [ -f "$here/BUILD_ROOT" ]; then
  export DEVCHECK_BUILD_ROOT="$(cat "$here/BUILD_ROOT")"
fi
exec "$here/cargo-devcheck" devcheck run-bundle "$here" "$@"
"#;

/// Assembles a bundle in `out` from `built` release binaries and `helper` (a
/// cargo-devcheck executable), recording `root` (where they were built) and
/// `commit`; returns its size, which must not pass `max_bytes` when given.
/// objcopy compresses the binaries' line tables and strips the helper's.
pub fn assemble(
    root: &Path,
    built: &[Built],
    helper: &Path,
    out: &Path,
    commit: Option<&str>,
    max_bytes: Option<u64>,
) -> Result<u64> {
    if out.exists() {
        // Only an earlier bundle is replaced: nothing else under --out is lost.
        let is_bundle = out.join("TARGETS").is_file() && out.join("run.sh").is_file();
        let is_empty = fs::read_dir(out).is_ok_and(|mut d| d.next().is_none());
        if !is_bundle && !is_empty {
            bail!(
                "{} exists and is not a devcheck bundle; give --out a new or empty folder",
                out.display()
            );
        }
        fs::remove_dir_all(out).with_context(|| format!("cannot replace {}", out.display()))?;
    }
    fs::create_dir_all(out.join("bin"))
        .with_context(|| format!("cannot create {}", out.display()))?;
    // Always written: an empty COMMIT (not a git checkout) keeps the binaries
    // from taking the commit of whatever repository run.sh is started in.
    fs::write(
        out.join("COMMIT"),
        format!("{}\n", commit.unwrap_or_default()),
    )?;
    // Sites are named relative to the repository; the binaries' debug info
    // holds this machine's absolute paths.
    fs::write(out.join("BUILD_ROOT"), format!("{}\n", root.display()))?;
    let mut targets = String::new();
    for b in built {
        let stem = b.target.file_stem();
        shrink(
            &b.executable,
            &out.join("bin").join(&stem),
            "--compress-debug-sections=zlib",
        )?;
        let snapshots = out.join("snapshots").join(&stem);
        fs::create_dir_all(&snapshots)?;
        if b.target.snapshots.is_dir() {
            for entry in fs::read_dir(&b.target.snapshots)? {
                let path = entry?.path();
                let name = path
                    .file_name()
                    .expect("a file")
                    .to_string_lossy()
                    .into_owned();
                if name.starts_with("readbacks__") && name.ends_with(".snap") {
                    fs::copy(&path, snapshots.join(&name))?;
                }
            }
        }
        targets.push_str(&stem);
        targets.push('\n');
    }
    fs::write(out.join("TARGETS"), targets)?;
    shrink(helper, &out.join("cargo-devcheck"), "--strip-all")?;
    let run = out.join("run.sh");
    fs::write(&run, RUN_SH)?;
    make_executable(&run)?;
    let size = folder_size(out)?;
    if let Some(max) = max_bytes.filter(|max| size > *max) {
        bail!(
            "the bundle in {} is {:.1} MiB, over the {} MiB limit",
            out.display(),
            size as f64 / 1048576.0,
            max / 1048576
        );
    }
    Ok(size)
}

/// The bundle's targets, as a run of its `run.sh` sees them: each binary runs
/// in the working directory, with the bundle's snapshots.
pub fn targets(bundle: &Path) -> Result<Vec<Built>> {
    let listed = fs::read_to_string(bundle.join("TARGETS"))
        .with_context(|| format!("{} is not a devcheck bundle (no TARGETS)", bundle.display()))?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    Ok(listed
        .lines()
        .filter(|l| !l.is_empty())
        .map(|stem| Built {
            target: Target {
                package: String::new(),
                name: stem.to_owned(),
                kind: TargetKind::Test,
                src_path: PathBuf::new(),
                package_dir: cwd.clone(),
                snapshots: bundle.join("snapshots").join(stem),
            },
            executable: bundle.join("bin").join(stem),
        })
        .collect())
}

/// `run.sh ARGS`: a verb, or the matrix over every target of the bundle.
pub fn run(bundle: &Path, args: &[String]) -> Result<ExitCode> {
    let built = targets(bundle)?;
    let first = built.first().context("the bundle holds no target")?;
    match args.first().map(String::as_str) {
        Some("doctor") => crate::status(first.command(None).args(args)),
        Some("cases") | Some("observer-cost") => {
            let mut code = ExitCode::SUCCESS;
            for b in &built {
                let this = crate::status(b.command(None).args(args))?;
                if this != ExitCode::SUCCESS {
                    code = this;
                }
            }
            Ok(code)
        }
        Some("sweep") => {
            let case = args
                .iter()
                .position(|a| a == "--case")
                .and_then(|i| args.get(i + 1));
            let owner = match case {
                Some(case) => crate::owner_of(&built, None, case)?,
                None => None,
            };
            // Without --case (--list, --help) the first target answers.
            crate::status(owner.unwrap_or(first).command(None).args(args))
        }
        _ => {
            let mut report = PathBuf::from("report.json");
            let mut rest = Vec::new();
            let mut iter = args.iter();
            while let Some(arg) = iter.next() {
                if arg == "--report" {
                    report = PathBuf::from(iter.next().context("`--report` takes a path")?);
                } else if let Some(path) = arg.strip_prefix("--report=") {
                    report = PathBuf::from(path);
                } else {
                    rest.push(arg.clone());
                }
            }
            let parts = tempfile::tempdir().context("cannot make a directory for the reports")?;
            let run = crate::Run {
                torch: None,
                parts: parts.path().to_path_buf(),
                report,
                args: rest,
                summary: None,
                filter: None,
                commit: None,
            };
            crate::run_targets(&built, &run)
        }
    }
}

fn shrink(from: &Path, to: &Path, how: &str) -> Result<()> {
    if !from.is_file() {
        bail!("cannot copy {} (was it built?)", from.display());
    }
    let status = std::process::Command::new("objcopy")
        .arg(how)
        .arg(from)
        .arg(to)
        .status()
        .context("cannot run objcopy (from binutils), which shrinks the bundle's binaries")?;
    if !status.success() {
        bail!("objcopy {how} {} failed with {status}", from.display());
    }
    make_executable(to)
}

fn make_executable(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn folder_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(dir: &Path, name: &str) -> Built {
        let package_dir = dir.join(name);
        fs::create_dir_all(package_dir.join("snapshots")).unwrap();
        fs::write(package_dir.join("snapshots/readbacks__net.snap"), "x").unwrap();
        fs::write(package_dir.join("snapshots/report_cpu.snap"), "y").unwrap();
        let executable = dir.join(format!("{name}-exe"));
        fs::write(&executable, "\x7fELF").unwrap();
        Built {
            target: Target {
                package: "model".into(),
                name: name.into(),
                kind: TargetKind::Test,
                src_path: package_dir.join("tests/devices.rs"),
                snapshots: package_dir.join("snapshots"),
                package_dir,
            },
            executable,
        }
    }

    #[test]
    fn a_missing_binary_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let mut built = target(dir.path(), "devices");
        built.executable = dir.path().join("nowhere");
        let error = assemble(
            dir.path(),
            &[built],
            &dir.path().join("helper"),
            &dir.path().join("out"),
            None,
            None,
        )
        .unwrap_err();
        assert!(
            format!("{error:#}").contains("nowhere (was it built?)"),
            "{error:#}"
        );
    }

    #[test]
    fn a_folder_that_is_not_a_bundle_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let built = target(dir.path(), "devices");
        let out = dir.path().join("out");
        fs::create_dir_all(&out).unwrap();
        fs::write(out.join("notes.txt"), "mine").unwrap();
        let error = assemble(
            dir.path(),
            &[built],
            &dir.path().join("helper"),
            &out,
            None,
            None,
        )
        .unwrap_err();
        assert!(
            format!("{error:#}").contains("is not a devcheck bundle"),
            "{error:#}"
        );
        assert_eq!(fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
    }

    #[test]
    fn a_bundle_lists_its_targets_and_their_snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        fs::create_dir_all(out.join("bin")).unwrap();
        fs::create_dir_all(out.join("snapshots/model-devices")).unwrap();
        fs::write(out.join("TARGETS"), "model-devices\nmodel-examples\n").unwrap();
        let listed = targets(&out).unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].executable, out.join("bin/model-devices"));
        assert_eq!(
            listed[1].target.snapshots,
            out.join("snapshots/model-examples")
        );
        let error = format!("{:#}", targets(dir.path()).unwrap_err());
        assert!(error.contains("is not a devcheck bundle"), "{error}");
    }
}
