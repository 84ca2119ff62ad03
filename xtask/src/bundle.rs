//! `cargo xtask gpu-bundle`: the matrix as a folder that runs where there is no
//! cargo — release binaries linked so that `libtorch_cuda` is kept, the reviewed
//! snapshots, and a `run.sh` that finds the host's libtorch.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Largest bundle we hand to another machine.
pub const MAX_BYTES: u64 = 60 * 1024 * 1024;

/// The binaries a bundle carries.
pub const BINARIES: [&str; 5] = [
    "devcheck-matrix",
    "devcheck-doctor",
    "devcheck-compare",
    "devcheck-sweep",
    "devcheck-observer-cost",
];

/// The launcher: finds libtorch (`DEVCHECK_LIBTORCH_LIB`, else python3's torch),
/// sets the loader path, and runs the matrix with the bundle's snapshots.
pub const RUN_SH: &str = r#"#!/usr/bin/env bash
# devcheck bundle launcher: runs the device matrix where there is no cargo.
#   ./run.sh [--report PATH] [--faults] [--device D] [FILTER] [libtest options]
#   ./run.sh doctor [--json]
#   ./run.sh compare EXPECTED.safetensors ACTUAL.safetensors [--json] [--rtol R --atol A]
#   ./run.sh sweep --case NAME [--device D] [--epochs N] [--out DIR]
#   ./run.sh observer-cost [--device D] [--ms N] [--batch-multiplier N]
# libtorch: DEVCHECK_LIBTORCH_LIB, else the lib dir of python3's torch package.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="${DEVCHECK_LIBTORCH_LIB:-}"
if [ -z "$lib" ]; then
  lib="$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null || true)"
fi
if [ -z "$lib" ] || [ ! -d "$lib" ]; then
  echo "run.sh: no libtorch found: set DEVCHECK_LIBTORCH_LIB to the directory holding libtorch_cpu, or install torch 2.11 for python3" >&2
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
case "${1:-}" in
  doctor|compare|sweep|observer-cost)
    verb="$1"
    shift
    exec "$here/devcheck-$verb" "$@"
    ;;
esac
exec "$here/devcheck-matrix" --snapshots "$here/snapshots/matrix" "$@"
"#;

/// Assembles a bundle in `out` from built binaries in `bin_dir`, recording
/// `commit` (the code it was built from) for the reports; returns its size.
/// With `shrink`, objcopy compresses the matrix's debug sections (its line
/// tables name the line of an untracked sync) and strips the doctor's.
pub fn assemble(
    root: &Path,
    bin_dir: &Path,
    out: &Path,
    shrink: bool,
    commit: Option<&str>,
) -> Result<u64> {
    fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    if let Some(commit) = commit {
        fs::write(out.join("COMMIT"), format!("{commit}\n"))?;
    }
    // Sites are named relative to the repository; the binaries' debug info
    // holds this machine's absolute paths.
    fs::write(out.join("BUILD_ROOT"), format!("{}\n", root.display()))?;
    for binary in BINARIES {
        let from = bin_dir.join(binary);
        let to = out.join(binary);
        if !from.is_file() {
            bail!("cannot copy {} (was it built?)", from.display());
        }
        match shrink {
            false => {
                fs::copy(&from, &to).with_context(|| format!("cannot copy {}", from.display()))?;
            }
            true => {
                // Line tables name the user's line of each op the observer reports.
                let how = if binary == "devcheck-matrix" {
                    "--compress-debug-sections=zlib"
                } else {
                    "--strip-debug"
                };
                let status = std::process::Command::new("objcopy")
                    .arg(how)
                    .arg(&from)
                    .arg(&to)
                    .status()
                    .context(
                        "cannot run objcopy (from binutils), which shrinks the bundle's binaries",
                    )?;
                if !status.success() {
                    bail!("objcopy {how} {} failed with {status}", from.display());
                }
            }
        }
    }
    let snapshots = out.join("snapshots/matrix");
    fs::create_dir_all(&snapshots)?;
    for entry in fs::read_dir(root.join("snapshots/matrix"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "snap")
            && path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("readbacks__"))
        {
            fs::copy(&path, snapshots.join(path.file_name().expect("a file")))?;
        }
    }
    let run = out.join("run.sh");
    fs::write(&run, RUN_SH)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&run, fs::Permissions::from_mode(0o755))?;
    }
    let size = folder_size(out)?;
    if size > MAX_BYTES {
        bail!(
            "the bundle in {} is {:.1} MiB, over the {} MiB limit",
            out.display(),
            size as f64 / 1048576.0,
            MAX_BYTES / 1048576
        );
    }
    Ok(size)
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

    #[test]
    fn assembles_binaries_snapshots_and_an_executable_launcher() {
        let root = tempfile_dir("root");
        fs::create_dir_all(root.join("snapshots/matrix")).unwrap();
        fs::write(root.join("snapshots/matrix/readbacks__cnn.snap"), "x").unwrap();
        fs::write(root.join("snapshots/matrix/report_cpu_faults.snap"), "y").unwrap();
        let bins = tempfile_dir("bins");
        for b in BINARIES {
            fs::write(bins.join(b), b).unwrap();
        }
        let out = tempfile_dir("out");
        let size = assemble(&root, &bins, &out, false, Some("abc123")).unwrap();
        assert_eq!(fs::read_to_string(out.join("COMMIT")).unwrap(), "abc123\n");
        assert!(out.join("snapshots/matrix/readbacks__cnn.snap").exists());
        assert!(!out.join("snapshots/matrix/report_cpu_faults.snap").exists());
        assert!(fs::read_to_string(out.join("run.sh"))
            .unwrap()
            .contains("DEVCHECK_LIBTORCH_LIB"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(out.join("run.sh"))
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o111,
                0o111
            );
        }
        assert_eq!(size, folder_size(&out).unwrap());
        for dir in [root, bins, out] {
            fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn a_missing_binary_is_named() {
        let root = tempfile_dir("root2");
        fs::create_dir_all(root.join("snapshots/matrix")).unwrap();
        let error =
            assemble(&root, &root.join("none"), &root.join("out"), false, None).unwrap_err();
        assert!(
            format!("{error:#}").contains("devcheck-matrix (was it built?)"),
            "{error:#}"
        );
        fs::remove_dir_all(root).unwrap();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-bundle-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}
