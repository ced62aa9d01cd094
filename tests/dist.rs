//! The release tarball (`make dist`), used as the README's install section says: unpacked in a
//! directory of its own, checked against its `SHA256SUMS`, and started with its own
//! `redis.conf.example` and module. `make test-dist` names the tarball in `SCALEBLOOM_DIST` and
//! runs this on Redis 7.0 and Valkey 9.1.
//!
//! These tests run only under `make test-dist` (`--ignored`): without the tarball they fail,
//! never skip.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The files every release tarball holds beside the manual (`docs/`).
const FILES: [&str; 6] = [
    "CHANGELOG.md",
    "LICENSE",
    "README.md",
    "SHA256SUMS",
    "libscalebloom.so",
    "redis.conf.example",
];

fn tarball() -> PathBuf {
    PathBuf::from(
        std::env::var("SCALEBLOOM_DIST").expect("SCALEBLOOM_DIST: the tarball make dist built"),
    )
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Unpacks the tarball into a new directory and returns that directory and the release's.
fn unpack(tag: &str) -> (Arc<TempDir>, PathBuf) {
    let version = env!("CARGO_PKG_VERSION");
    let name = format!("scalebloom-{version}-linux-x86_64");
    let tarball = tarball();
    assert_eq!(
        tarball.file_name().and_then(|n| n.to_str()),
        Some(format!("{name}.tar.gz").as_str()),
        "the tarball is named for Cargo's version"
    );
    let dir = Arc::new(TempDir::new(tag));
    run(dir.path(), "tar", &["-xzf", &tarball.to_string_lossy()]);
    let top: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, std::slice::from_ref(&name), "one top-level directory, named for the release");
    let release = dir.path().join(&name);
    (dir, release)
}

/// The newest `GLIBC_x.y` symbol version the module needs.
fn glibc_needed(so: &Path) -> (u32, u32) {
    let symbols = run(Path::new("."), "objdump", &["-T", &so.to_string_lossy()]);
    symbols
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("(GLIBC_").or(w.strip_prefix("GLIBC_")))
        .map(|v| parse_glibc(v.trim_end_matches(')')))
        .max()
        .expect("the module links against glibc")
}

fn parse_glibc(v: &str) -> (u32, u32) {
    let mut it = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (it.next().unwrap_or(0), it.next().unwrap_or(0))
}

#[test]
#[ignore = "make test-dist: needs the tarball make dist builds"]
fn the_tarball_holds_the_release_and_its_checksums() {
    let (_dir, release) = unpack("dist-files");
    for file in FILES {
        assert!(release.join(file).is_file(), "{file} in the tarball");
    }
    assert!(release.join("docs/upgrading.md").is_file(), "the manual in the tarball");
    assert!(release.join("docs/commands/bf.add.md").is_file(), "the command pages in the tarball");
    // What the README's install section runs; every file but SHA256SUMS itself is listed.
    run(&release, "sha256sum", &["--check", "--strict", "--quiet", "SHA256SUMS"]);
    let sums = std::fs::read_to_string(release.join("SHA256SUMS")).unwrap();
    let listed: Vec<&str> =
        sums.lines().filter_map(|l| l.split_once("  ").map(|(_, f)| f)).collect();
    let files = run(&release, "find", &[".", "-type", "f", "!", "-name", "SHA256SUMS"]);
    assert_eq!(listed.len(), files.lines().count(), "SHA256SUMS lists every file");
    for file in ["LICENSE", "libscalebloom.so", "docs/upgrading.md"] {
        assert!(listed.contains(&file), "SHA256SUMS lists {file}");
    }
    // The licence and the changelog's release are this version's.
    assert!(std::fs::read_to_string(release.join("LICENSE")).unwrap().starts_with("MIT License"));
    let changelog = std::fs::read_to_string(release.join("CHANGELOG.md")).unwrap();
    let this_release = |l: &str| {
        l.strip_prefix("## ")
            .is_some_and(|h| h.trim_start_matches('[').starts_with(env!("CARGO_PKG_VERSION")))
    };
    assert!(changelog.lines().any(this_release), "CHANGELOG.md has this release");
}

#[test]
#[ignore = "make test-dist: needs the tarball make dist builds"]
fn the_module_needs_no_newer_glibc_than_the_readme_states() {
    let (_dir, release) = unpack("dist-glibc");
    let readme = std::fs::read_to_string(release.join("README.md")).unwrap();
    // "glibc 2.17 or later", in the install section.
    let stated = readme
        .split("glibc ")
        .skip(1)
        .find_map(|rest| {
            let v: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
            (rest[v.len()..].starts_with(" or later") && v.contains('.')).then(|| parse_glibc(&v))
        })
        .expect("the README states the oldest glibc (\"glibc X.Y or later\")");
    let needed = glibc_needed(&release.join("libscalebloom.so"));
    assert!(needed <= stated, "the module needs glibc {needed:?}; the README states {stated:?}");
}

#[test]
#[ignore = "make test-dist: needs the tarball make dist builds"]
fn the_unpacked_module_loads_with_its_config_and_keeps_filters() {
    let (dir, release) = unpack("dist-load");
    let so = release.join("libscalebloom.so");
    let mut opts =
        ServerOpts::new().config_file(&release.join("redis.conf.example")).without_module();
    opts.extra_args.extend(["--loadmodule".to_string(), so.to_string_lossy().into_owned()]);
    let s = Server::start_in(dir, opts);
    let mut c = s.conn();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(c.module_ver("bf"), encoded_version(version));
    assert_eq!(c.info_field("bf", "bf_version").as_deref(), Some(version));
    c.ok(&["BF.RESERVE", "plain", "0.01", "1000"]);
    c.ok(&["BF.RESERVE", "counting", "0.01", "1000", "COUNTING", "4"]);
    c.ok(&["CF.RESERVE", "cuckoo", "1000"]);
    assert_eq!(c.cmd(&["BF.ADD", "plain", "a"]).as_int(), 1);
    assert_eq!(c.cmd(&["BF.ADD", "counting", "a"]).as_int(), 1);
    assert_eq!(c.cmd(&["BF.DEL", "counting", "a"]).as_int(), 1);
    assert_eq!(c.cmd(&["CF.ADD", "cuckoo", "a"]).as_int(), 1);
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.cmd(&["BF.EXISTS", "plain", "a"]).as_int(), 1);
    assert_eq!(c.cmd(&["BF.EXISTS", "plain", "b"]).as_int(), 0);
    assert_eq!(c.cmd(&["BF.EXISTS", "counting", "a"]).as_int(), 0);
    assert_eq!(c.cmd(&["CF.EXISTS", "cuckoo", "a"]).as_int(), 1);
}
