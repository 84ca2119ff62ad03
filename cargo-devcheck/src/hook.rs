//! `cargo devcheck install-hook` (and devcheck's `cargo xtask install-hook`): a git pre-commit hook that runs devcheck-lint
//! on what is about to be committed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The hook. It lints the staged content, not the working tree: the staged
/// Rust files are mirrored, with every `Cargo.toml` and `devcheck.toml` in
/// the index (crate boundaries and configuration), into a temporary
/// directory by `git checkout-index`, which takes NUL-separated names, so
/// any file name works. Calls into files that are not staged are not
/// followed there.
const SCRIPT: &str = r#"#!/bin/sh
# devcheck-lint pre-commit hook, written by `cargo devcheck install-hook`.
# Lints the staged content of the staged Rust files; warnings and errors
# block the commit, notes pass. Skip it once with `git commit --no-verify`.
set -eu
root=$(git rev-parse --show-toplevel)
cd "$root"
work=$(mktemp -d "${TMPDIR:-/tmp}/devcheck-hook.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

git diff --cached --name-only --diff-filter=ACMR -z -- '*.rs' >"$work/staged"
[ -s "$work/staged" ] || exit 0
mkdir "$work/index"
{
    cat "$work/staged"
    git ls-files -z -- ':(glob)**/Cargo.toml' ':(glob)**/devcheck.toml'
} | git checkout-index -z --stdin --prefix="$work/index/"

# DEVCHECK_LINT names a devcheck-lint binary; inside the devcheck workspace
# the current source is built; elsewhere an installed devcheck-lint, else
# cargo-devcheck's `lint`, is used.
if [ -n "${DEVCHECK_LINT:-}" ]; then
    set -- "$DEVCHECK_LINT" --
elif [ -f "$root/lints/Cargo.toml" ]; then
    set -- cargo run --quiet --manifest-path "$root/Cargo.toml" --package devcheck-lint -- --
elif command -v devcheck-lint >/dev/null 2>&1; then
    set -- devcheck-lint --
elif command -v cargo-devcheck >/dev/null 2>&1; then
    set -- cargo-devcheck devcheck lint --
else
    echo "devcheck-lint: not found; install it with \`cargo install --locked --git <devcheck repository> devcheck-lint\`, or set DEVCHECK_LINT to its path" >&2
    exit 1
fi

# Paths are relative to the mirror, so diagnostics name repository paths.
cd "$work/index"
status=0
xargs -0 "$@" <"$work/staged" || status=$?
if [ "$status" -ne 0 ]; then
    echo "devcheck-lint: commit blocked; fix the findings above, silence one with \`// devcheck: allow(<rule>)\`, or commit with --no-verify" >&2
    exit 1
fi
"#;

/// Writes the devcheck-lint pre-commit hook into the hooks directory of the
/// repository at `root` (wherever `git rev-parse --git-path hooks` says, so
/// worktrees and `core.hooksPath` work) and returns its path. An existing
/// hook with other content is replaced only when `force` is set.
pub fn install(root: &Path, force: bool) -> Result<PathBuf> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--git-path", "hooks"])
        .output()
        .context("failed to run git; is it installed?")?;
    if !output.status.success() {
        bail!(
            "{} is not inside a git repository: {}",
            root.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let hooks = String::from_utf8(output.stdout).context("git printed a non-UTF-8 hooks path")?;
    // Relative answers are relative to the directory git ran in.
    let hooks = root.join(hooks.trim_end_matches(['\n', '\r']));
    let hook = hooks.join("pre-commit");
    let current = std::fs::read(&hook).ok();
    if current.as_deref() != Some(SCRIPT.as_bytes()) {
        if hook.exists() && !force {
            bail!(
                "{} already exists and is not devcheck's hook; move it aside (or merge it into \
                 yours by hand), or run `cargo devcheck install-hook --force` to replace it",
                hook.display()
            );
        }
        std::fs::create_dir_all(&hooks)
            .with_context(|| format!("cannot create {}", hooks.display()))?;
        std::fs::write(&hook, SCRIPT)
            .with_context(|| format!("cannot write {}", hook.display()))?;
    }
    make_executable(&hook)?;
    Ok(hook)
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<()> {
    // Git for Windows runs hooks through its own sh; no mode bit exists.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch git repository under the system temp dir, removed on drop.
    struct TempRepo {
        root: PathBuf,
    }

    impl TempRepo {
        fn new(name: &str) -> TempRepo {
            let root = std::env::temp_dir().join(format!(
                "devcheck-hook-{name}-{}-{:?}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos()
            ));
            std::fs::create_dir_all(&root).unwrap();
            let repo = TempRepo { root };
            repo.git(&["init", "-q"]);
            repo
        }

        fn git(&self, args: &[&str]) -> std::process::Output {
            Command::new("git")
                .arg("-C")
                .arg(&self.root)
                .args([
                    "-c",
                    "user.name=devcheck",
                    "-c",
                    "user.email=devcheck@example.com",
                ])
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .expect("git runs")
        }
    }

    impl Drop for TempRepo {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    #[test]
    fn installs_an_executable_hook_that_lints_staged_files() {
        let repo = TempRepo::new("install");
        let hook = install(&repo.root, false).unwrap();
        assert_eq!(hook, repo.root.join(".git/hooks/pre-commit"));
        let text = std::fs::read_to_string(&hook).unwrap();
        assert!(text.starts_with("#!/bin/sh\n"));
        assert!(text.contains("git diff --cached --name-only --diff-filter=ACMR -z -- '*.rs'"));
        assert!(text.contains("git checkout-index -z --stdin"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&hook).unwrap().permissions().mode();
            assert_eq!(mode & 0o111, 0o111, "mode {mode:o}");
        }
        // Installing again is a no-op, not a refusal.
        assert_eq!(install(&repo.root, false).unwrap(), hook);
    }

    #[test]
    fn core_hooks_path_is_respected() {
        let repo = TempRepo::new("hookspath");
        repo.git(&["config", "core.hooksPath", "tools/hooks"]);
        let hook = install(&repo.root, false).unwrap();
        assert_eq!(hook, repo.root.join("tools/hooks/pre-commit"));
        assert!(hook.is_file());
    }

    #[test]
    fn a_different_hook_is_kept_unless_forced() {
        let repo = TempRepo::new("refuse");
        let hook = repo.root.join(".git/hooks/pre-commit");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
        let error = install(&repo.root, false).unwrap_err().to_string();
        assert!(error.contains("already exists"), "{error}");
        assert!(error.contains("--force"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&hook).unwrap(),
            "#!/bin/sh\nexit 0\n"
        );
        install(&repo.root, true).unwrap();
        assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);
    }

    /// Builds devcheck-lint and returns its path.
    fn devcheck_lint() -> PathBuf {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .current_dir(workspace)
            .args([
                "build",
                "--quiet",
                "--package",
                "devcheck-lint",
                "--bin",
                "devcheck-lint",
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.join("target"));
        target
            .join("debug")
            .join(format!("devcheck-lint{}", std::env::consts::EXE_SUFFIX))
    }

    #[cfg(unix)]
    #[test]
    fn the_hook_blocks_a_staged_sync_in_a_loop_and_lints_the_staged_content() {
        let repo = TempRepo::new("e2e");
        install(&repo.root, false).unwrap();
        let lint = devcheck_lint();
        let commit = |message: &str| {
            Command::new("git")
                .arg("-C")
                .arg(&repo.root)
                .args([
                    "-c",
                    "user.name=devcheck",
                    "-c",
                    "user.email=devcheck@example.com",
                ])
                .args(["commit", "-q", "-m", message])
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("DEVCHECK_LINT", &lint)
                .output()
                .unwrap()
        };
        let file = repo.root.join("src/train step.rs");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let syncing = "use tch::Tensor;\nfn train(loss: &Tensor) {\n    for _ in 0..10 {\n        let _ = loss.double_value(&[]);\n    }\n}\n";
        std::fs::write(&file, syncing).unwrap();
        repo.git(&["add", "src/train step.rs"]);
        let blocked = commit("sync per step");
        // Git sends a hook's stdout to stderr.
        let output = format!(
            "{}{}",
            String::from_utf8_lossy(&blocked.stdout),
            String::from_utf8_lossy(&blocked.stderr)
        );
        assert!(!blocked.status.success(), "{output}");
        assert!(output.contains("warning[host-sync]"), "{output}");
        assert!(output.contains("--> src/train step.rs:4:22"), "{output}");
        assert!(output.contains("commit blocked"), "{output}");

        // Fixing only the working tree does not help: the staged content is linted.
        let fixed = syncing.replace(
            "let _ = loss.double_value(&[]);",
            "let _ = loss.shallow_clone();",
        );
        std::fs::write(&file, &fixed).unwrap();
        assert!(!commit("still staged").status.success());

        repo.git(&["add", "src/train step.rs"]);
        let passed = commit("read once");
        assert!(
            passed.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&passed.stdout),
            String::from_utf8_lossy(&passed.stderr)
        );
    }
}
