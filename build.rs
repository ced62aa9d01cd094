//! Tells the crate whether its compiler has the AVX-512 intrinsics (stable since Rust 1.89).
//!
//! The crate builds with Rust 1.85 (Debian 13's); with 1.89 or newer it also compiles the
//! windowed filter's AVX-512 query (`src/filter/window/gen512.rs`), used where the CPU has
//! AVX-512F. The cfg `scalebloom_avx512` says so. `SCALEBLOOM_NO_AVX512=1` at build time leaves
//! it out on any compiler (to measure the AVX2 path on a CPU that has AVX-512).

use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(scalebloom_avx512)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=RUSTC");
    println!("cargo::rerun-if-env-changed=SCALEBLOOM_NO_AVX512");
    if std::env::var_os("SCALEBLOOM_NO_AVX512").is_some_and(|v| v == "1") {
        return;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok());
    if version.as_deref().and_then(minor_version).is_some_and(|minor| minor >= 89) {
        println!("cargo::rustc-cfg=scalebloom_avx512");
    }
}

/// The minor version of `rustc --version`'s output ("rustc 1.95.0 (… )"); a major version
/// above 1 counts as newer than any 1.x.
fn minor_version(version: &str) -> Option<u32> {
    let mut parts = version.split_whitespace().nth(1)?.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    match major {
        1 => Some(minor),
        0 => None,
        _ => Some(u32::MAX),
    }
}
