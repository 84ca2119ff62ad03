//! `cargo xtask bench-first-report`: the time a new user waits, from an empty
//! repository to the first report, as the README tells them to get there.
//!
//! A crate is made from nothing but the README: the test target of "Your own
//! cases" (its first Rust block, as written), devcheck as a dev-dependency of
//! this checkout, and the tch release this workspace resolved, so that the
//! libtorch it needs is the one already provisioned (the user's cache). Then,
//! each in a fresh target directory and timed: `cargo install` of
//! cargo-devcheck, the first `cargo devcheck matrix` (build and run: the first
//! report), `cargo devcheck review --accept` and the green run after it. Last,
//! devcheck's own crates are rebuilt alone, which tells how much of the first
//! build is devcheck's and how much its dependencies'.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use cargo_devcheck::libtorch::Wanted;

/// The README's test target, and the heading it sits under.
const EXAMPLE_HEADING: &str = "### Your own cases";

/// One timed command and what it ended with.
struct Phase {
    what: &'static str,
    took: Duration,
    code: Option<i32>,
}

/// Runs the benchmark in `dir` (emptied first) and prints its figures.
pub fn run(root: &Path, dir: &Path) -> Result<()> {
    let wanted = Wanted::of_workspace(Some(&root.join("Cargo.toml")))?;
    let example = readme_example(&std::fs::read_to_string(root.join("README.md"))?)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let user = dir.join("user");
    std::fs::create_dir_all(user.join("src"))?;
    std::fs::create_dir_all(user.join("tests"))?;
    std::fs::write(user.join("Cargo.toml"), manifest(root, &wanted.tch))?;
    std::fs::write(user.join("src/lib.rs"), "")?;
    std::fs::write(user.join("tests/devices.rs"), example)?;
    std::fs::write(user.join(".gitignore"), "/target\n")?;
    // A repository, as the user's is (paths are reported relative to it).
    let git = Command::new("git")
        .current_dir(&user)
        .args(["init", "-q"])
        .status();
    if !git.is_ok_and(|status| status.success()) {
        bail!("git init in {} failed", user.display());
    }

    let install_root = dir.join("install");
    let cargo_devcheck = install_root.join("bin/cargo-devcheck");
    let mut phases = Vec::new();

    let mut install = Command::new(cargo());
    install
        .args(["install", "--locked", "--path"])
        .arg(root.join("cargo-devcheck"))
        .arg("--root")
        .arg(&install_root)
        .arg("--target-dir")
        .arg(dir.join("install-target"));
    phases.push(timed("cargo install cargo-devcheck", &mut install)?);
    if phases[0].code != Some(0) {
        bail!("cargo install of cargo-devcheck failed");
    }

    let devcheck = |args: &[&str]| {
        let mut command = Command::new(&cargo_devcheck);
        command
            .current_dir(&user)
            .arg("devcheck")
            .args(args)
            .env("CARGO_TARGET_DIR", user.join("target"))
            // As on a user's machine: libtorch comes from devcheck's cache, and
            // the first run leaves its snapshot to review.
            .env_remove("LIBTORCH")
            .env_remove("LIBTORCH_USE_PYTORCH")
            .env_remove("LIBTORCH_CXX11_ABI")
            .env_remove("CI");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("DEVCHECK_") && key != "DEVCHECK_CACHE_DIR" {
                command.env_remove(key);
            }
        }
        command
    };
    let report = user.join("target/devcheck/report.json");
    phases.push(timed(
        "cargo devcheck matrix (first: build and run)",
        &mut devcheck(&["matrix"]),
    )?);
    if !report.exists() {
        bail!("the first `cargo devcheck matrix` wrote no report");
    }
    phases.push(timed(
        "cargo devcheck review --accept",
        &mut devcheck(&["review", "--accept"]),
    )?);
    phases.push(timed(
        "cargo devcheck matrix (green)",
        &mut devcheck(&["matrix"]),
    )?);
    let mut clean = Command::new(cargo());
    clean
        .current_dir(&user)
        .args(["clean", "--package", "devcheck", "--target-dir"])
        .arg(user.join("target"));
    if timed("cargo clean --package devcheck", &mut clean)?.code != Some(0) {
        bail!("cargo clean --package devcheck failed");
    }
    phases.push(timed(
        "cargo devcheck matrix (devcheck rebuilt alone)",
        &mut devcheck(&["matrix"]),
    )?);

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "\nfrom an empty repository to the first report: tch {}, libtorch {} from devcheck's \
         cache, {cores} cores, in {}",
        wanted.tch,
        wanted.torch,
        cargo_devcheck::shown(dir)
    );
    for phase in &phases {
        let code = phase.code.map_or("signal".to_owned(), |c| c.to_string());
        println!(
            "  {:<50} {:>8.1} s   exit {code}",
            phase.what,
            phase.took.as_secs_f64()
        );
    }
    let first_report = phases[0].took + phases[1].took;
    let green = first_report + phases[2].took + phases[3].took;
    let own = phases[4].took.saturating_sub(phases[3].took);
    println!(
        "  {:<50} {:>8.1} s",
        "to the first report",
        first_report.as_secs_f64()
    );
    println!(
        "  {:<50} {:>8.1} s",
        "to a green report",
        green.as_secs_f64()
    );
    println!(
        "  {:<50} {:>8.1} s   ({:.0}% of the first matrix's build and run)",
        "devcheck's own crates in a build",
        own.as_secs_f64(),
        100.0 * own.as_secs_f64() / phases[1].took.as_secs_f64()
    );
    if phases[3].code != Some(0) {
        bail!(
            "the run after review is not green (exit {:?})",
            phases[3].code
        );
    }
    Ok(())
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn timed(what: &'static str, command: &mut Command) -> Result<Phase> {
    eprintln!("devcheck: == {what} ==");
    let start = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("running {what}"))?;
    Ok(Phase {
        what,
        took: start.elapsed(),
        code: status.code(),
    })
}

/// The user's manifest: the README's dev-dependency and test target, with this
/// checkout for devcheck; a workspace of its own (it sits in devcheck's target
/// directory, as a user's repository sits nowhere near devcheck's).
fn manifest(root: &Path, tch: &str) -> String {
    let harness = root.join("harness");
    format!(
        "[package]\nname = \"first-report\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [workspace]\n\n\
         [dependencies]\ntch = \"={tch}\"\n\n\
         [dev-dependencies]\ndevcheck = {{ path = {:?} }}\n\n\
         [[test]]\nname = \"devices\"\nharness = false\n",
        harness.to_string_lossy()
    )
}

/// The first Rust block after the README's "Your own cases" heading.
fn readme_example(readme: &str) -> Result<String> {
    let after = readme
        .split_once(EXAMPLE_HEADING)
        .map(|(_, after)| after)
        .with_context(|| format!("README.md has no `{EXAMPLE_HEADING}`"))?;
    let block = after
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .with_context(|| format!("no Rust block under `{EXAMPLE_HEADING}` in README.md"))?;
    Ok(format!("{block}\n"))
}

/// Where the benchmark works unless told: under the workspace's target directory.
pub fn default_dir(target_dir: &Path) -> PathBuf {
    target_dir.join("bench-first-report")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readme_example_is_its_first_rust_block_under_the_heading() {
        let readme = "# x\n```rust\nnot this\n```\n### Your own cases\ntext\n```toml\n\
                      a = 1\n```\n```rust\nfn main() {}\n```\n```rust\nnor this\n```\n";
        assert_eq!(readme_example(readme).unwrap(), "fn main() {}\n");
    }

    #[test]
    fn the_project_readme_has_the_example() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let example = readme_example(&readme).unwrap();
        assert!(example.starts_with("// tests/devices.rs\n"), "{example}");
        assert!(example.contains("devcheck::run(vec![case])"), "{example}");
    }
}
