//! Picks the Hyperscan library `src/hs.rs` links against.
//!
//! Default: the system's Intel Hyperscan found through `pkg-config libhs` (Debian's
//! `libhyperscan-dev`). Its static archive is preferred: Debian builds it with the fat runtime
//! (core2 … AVX-512 VBMI code paths chosen at run time), so the extension carries the engine and
//! needs no shared library wherever it runs. Without `libhs.a` the shared library is linked.
//! `MEMFRAME_HS_LIB_DIR` points at another directory holding `libhs.a` or `libhs.so`.
//!
//! With the `vendored` feature, `vectorscan-rs-sys` compiles Vectorscan from source instead
//! (aarch64, distributions without the package); nothing is searched here.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MEMFRAME_HS_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_VENDORED").is_some() {
        println!("cargo:rustc-env=MEMFRAME_HS_SOURCE=vendored");
        return;
    }
    let dir = env::var_os("MEMFRAME_HS_LIB_DIR")
        .map(PathBuf::from)
        .or_else(pkg_config_libdir)
        .unwrap_or_else(|| {
            panic!(
                "memframe-core: the Hyperscan library was not found (pkg-config libhs). Install \
                 it (Debian/Ubuntu x86-64: apt-get install libhyperscan-dev), set \
                 MEMFRAME_HS_LIB_DIR, or build Vectorscan from source with --features vendored"
            )
        });
    println!("cargo:rustc-link-search=native={}", dir.display());
    if dir.join("libhs.a").is_file() {
        println!("cargo:rerun-if-changed={}", dir.join("libhs.a").display());
        println!("cargo:rustc-link-lib=static=hs");
        // Debian's libhs.a refers to libstdc++'s data PC-relatively (built as PIE, not PIC):
        // that links into a shared object only when libstdc++ is inside it too, with its
        // symbols kept local (a cdylib exports only its own), so libstdc++ goes in statically.
        match static_libstdcxx() {
            Some(dir) => {
                println!("cargo:rustc-link-search=native={}", dir.display());
                println!("cargo:rustc-link-lib=static=stdc++");
            }
            None => println!("cargo:rustc-link-lib=dylib=stdc++"),
        }
        println!("cargo:rustc-env=MEMFRAME_HS_SOURCE=system-static");
    } else if dir.join("libhs.so").exists() {
        println!("cargo:rustc-link-lib=dylib=hs");
        println!("cargo:rustc-env=MEMFRAME_HS_SOURCE=system-shared");
    } else {
        panic!(
            "memframe-core: {} holds neither libhs.a nor libhs.so",
            dir.display()
        );
    }
}

/// The directory of the C++ compiler's `libstdc++.a`.
fn static_libstdcxx() -> Option<PathBuf> {
    let compiler = env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let output = Command::new(compiler)
        .arg("-print-file-name=libstdc++.a")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    // without the file, the compiler prints the bare name back
    if path.is_absolute() && path.is_file() {
        path.parent().map(PathBuf::from)
    } else {
        None
    }
}

fn pkg_config_libdir() -> Option<PathBuf> {
    let output = Command::new("pkg-config")
        .args(["--variable=libdir", "libhs"])
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}
