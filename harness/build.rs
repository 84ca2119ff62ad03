//! Compiles the C++ shim against the headers of the libtorch that torch-sys
//! linked, keeps `libtorch_cuda` linked into this crate's binaries, and tells
//! the Rust side which libtorch (and so which tch release) it is built with.
//!
//! Version differences are switched on libtorch's own version, read from its
//! `torch/version.h`: the C++ side reads the same macros (`shim/compat.h`), the
//! Rust side gets `torch_2_N` cfgs, one for every minor release up to the one
//! linked ("at least 2.N", as openssl-sys's `ossl300`).

use std::env;
use std::path::{Path, PathBuf};

/// The oldest and newest libtorch minor releases (2.N) devcheck builds against.
const OLDEST_MINOR: u32 = 0;
const NEWEST_MINOR: u32 = 13;

fn main() {
    for file in [
        "devcheck_shim.cpp",
        "devcheck_shim.h",
        "observer.cpp",
        "random.cpp",
        "guarded.h",
        "compat.h",
    ] {
        println!("cargo:rerun-if-changed=shim/{file}");
    }
    for minor in 1..=NEWEST_MINOR + 1 {
        println!("cargo::rustc-check-cfg=cfg(torch_2_{minor})");
    }

    // torch-sys (`links = "tch"`) publishes the lib dir it linked against.
    let lib_dir = PathBuf::from(
        env::var("DEP_TCH_LIBTORCH_LIB")
            .expect("torch-sys did not report its libtorch lib dir (DEP_TCH_LIBTORCH_LIB)"),
    );
    let root = lib_dir.parent().unwrap_or(Path::new("/"));
    let include = root.join("include");
    let (major, minor) = torch_version(&include);
    if major != 2 || !(OLDEST_MINOR..=NEWEST_MINOR).contains(&minor) {
        println!(
            "cargo:warning=devcheck is built for libtorch 2.{OLDEST_MINOR} to 2.{NEWEST_MINOR} \
             (tch 0.13 to 0.26); {} is libtorch {major}.{minor}",
            include.display()
        );
    }
    for at_least in 1..=minor.min(NEWEST_MINOR + 1) {
        println!("cargo:rustc-cfg=torch_2_{at_least}");
    }
    println!("cargo:rustc-env=DEVCHECK_TORCH_SERIES={major}.{minor}");
    // torch-sys accepts exactly one libtorch release per tch release (unless
    // LIBTORCH_BYPASS_VERSION_CHECK is set), so the libtorch says the tch.
    println!(
        "cargo:rustc-env=DEVCHECK_TCH_SERIES={}",
        tch_series(major, minor).unwrap_or_else(|| "unknown".to_owned())
    );

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
        .flag(include.to_str().expect("utf-8 libtorch path"))
        .flag("-isystem")
        .flag(
            include
                .join("torch/csrc/api/include")
                .to_str()
                .expect("utf-8 libtorch path"),
        )
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra");
    if target_os == "linux" {
        // The shim passes std::string across libtorch's ABI: compile it as the
        // library was built (the pip wheels before 2.7 used the old ABI).
        println!("cargo:rerun-if-env-changed=LIBTORCH_CXX11_ABI");
        let abi = match cxx11_abi(&lib_dir) {
            Some(abi) => abi,
            None => env::var("LIBTORCH_CXX11_ABI").map_or(true, |v| v != "0"),
        };
        build.define("_GLIBCXX_USE_CXX11_ABI", if abi { "1" } else { "0" });
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

/// libtorch's `TORCH_VERSION_MAJOR` and `TORCH_VERSION_MINOR`, from the header
/// that defines them (`torch/headeronly/version.h` since 2.10, the C++ API's
/// `torch/version.h` before).
fn torch_version(include: &Path) -> (u32, u32) {
    let headers = [
        include.join("torch/headeronly/version.h"),
        include.join("torch/csrc/api/include/torch/version.h"),
    ];
    for header in &headers {
        println!("cargo:rerun-if-changed={}", header.display());
        let Ok(text) = std::fs::read_to_string(header) else {
            continue;
        };
        let number = |name: &str| {
            text.lines().find_map(|line| {
                let rest = line.trim().strip_prefix("#define")?.trim_start();
                rest.strip_prefix(name)?.trim().parse::<u32>().ok()
            })
        };
        if let (Some(major), Some(minor)) =
            (number("TORCH_VERSION_MAJOR"), number("TORCH_VERSION_MINOR"))
        {
            return (major, minor);
        }
    }
    panic!(
        "no TORCH_VERSION_MAJOR/MINOR in {} or {}: is DEP_TCH_LIBTORCH_LIB a libtorch lib directory?",
        headers[0].display(),
        headers[1].display()
    )
}

/// The tch release series torch-sys pairs with libtorch 2.N: 0.(N+13), from
/// 0.13 with 2.0 to 0.26 with 2.13.
fn tch_series(major: u32, minor: u32) -> Option<String> {
    (major == 2).then(|| format!("0.{}", minor + 13))
}

/// Whether libtorch was built with the C++11 string ABI, read from how
/// `c10::Error`'s constructor is mangled in `libc10.so`.
fn cxx11_abi(lib_dir: &Path) -> Option<bool> {
    let bytes = std::fs::read(lib_dir.join("libc10.so")).ok()?;
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if has(b"_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx11") {
        Some(true)
    } else if has(b"_ZN3c105ErrorC1ENS_14SourceLocationESs") {
        Some(false)
    } else {
        None
    }
}
