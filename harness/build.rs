//! Compiles the C++ shim against the headers of the libtorch that torch-sys
//! linked, and keeps `libtorch_cuda` linked into this crate's binaries.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=shim/devcheck_shim.cpp");
    println!("cargo:rerun-if-changed=shim/devcheck_shim.h");
    println!("cargo:rerun-if-changed=shim/observer.cpp");
    println!("cargo:rerun-if-changed=shim/random.cpp");
    println!("cargo:rerun-if-changed=shim/guarded.h");
    println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!(
        "cargo:rustc-env=DEVCHECK_TCH_VERSION={}",
        pinned_tch_version()
    );

    // torch-sys (`links = "tch"`) publishes the lib dir it linked against.
    let lib_dir = PathBuf::from(
        env::var("DEP_TCH_LIBTORCH_LIB")
            .expect("torch-sys did not report its libtorch lib dir (DEP_TCH_LIBTORCH_LIB)"),
    );
    let root = lib_dir.parent().unwrap_or(Path::new("/"));
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();

    let mut build = cc::Build::new();
    build
        .cpp(true)
        .pic(true)
        .std("c++17")
        .file("shim/devcheck_shim.cpp")
        .file("shim/observer.cpp")
        .file("shim/random.cpp")
        .include("shim")
        // As libtorch's release wheels are built: without it an inline debug
        // assert in record_function.h fires on `RecordFunction::inputs()`.
        .define("NDEBUG", None)
        // libtorch's headers are not ours to keep warning-free.
        .flag("-isystem")
        .flag(root.join("include").to_str().expect("utf-8 libtorch path"))
        .flag("-isystem")
        .flag(
            root.join("include/torch/csrc/api/include")
                .to_str()
                .expect("utf-8 libtorch path"),
        )
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra");
    if target_os != "windows" {
        let abi = env::var("LIBTORCH_CXX11_ABI").unwrap_or_else(|_| "1".to_owned());
        build.define("_GLIBCXX_USE_CXX11_ABI", abi.as_str());
    }
    build.compile("devcheck_shim");

    // Binaries built from this crate find libtorch without a library path.
    if target_os == "linux" || target_os == "macos" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    }
    // With --as-needed (rustc's default on Linux) nothing references
    // libtorch_cuda directly, so it is dropped and CUDA reads as unavailable.
    if target_os == "linux" && lib_dir.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
    println!("cargo:libtorch_lib={}", lib_dir.display());
}

/// The exact tch version pinned in this crate's manifest (`tch = "=X"`).
fn pinned_tch_version() -> String {
    let manifest = std::fs::read_to_string("Cargo.toml").expect("read harness/Cargo.toml");
    manifest
        .lines()
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("tch")?
                .trim_start()
                .strip_prefix('=')?;
            Some(
                value
                    .trim()
                    .trim_matches('"')
                    .trim_start_matches('=')
                    .to_owned(),
            )
        })
        .expect("harness/Cargo.toml pins tch as `tch = \"=X.Y.Z\"`")
}
