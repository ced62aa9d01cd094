//! One version everywhere: Cargo.toml's is what `MODULE LIST` (`ver`, encoded as RedisBloom
//! encodes its own: major × 10000 + minor × 100 + patch) and `INFO bf` (`bf_version`) show,
//! what the Python package declares, and the latest release CHANGELOG.md describes.

mod common;
use common::*;

/// The value of the first `name = "…"` line of a TOML file or `name = "…"` of a Python file.
fn quoted_after(text: &str, name: &str) -> String {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(name)?.trim_start().strip_prefix('=')?.trim().strip_prefix('"')
        })
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or_else(|| panic!("no {name} line"))
        .to_string()
}

#[test]
fn module_list_and_info_show_cargos_version() {
    let version = env!("CARGO_PKG_VERSION");
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(c.module_ver("bf"), encoded_version(version));
    assert_eq!(c.info_field("bf", "bf_version").as_deref(), Some(version));
}

#[test]
fn the_python_package_declares_the_same_version() {
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(quoted_after(&repo_file("clients/python/pyproject.toml"), "version"), version);
    let init = repo_file("clients/python/src/scalebloom/__init__.py");
    assert_eq!(quoted_after(&init, "__version__"), version);
}

#[test]
fn the_changelogs_latest_release_is_cargos_version() {
    let changelog = repo_file("CHANGELOG.md");
    let latest = changelog
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .find(|h| !h.starts_with("Unreleased"))
        .expect("a release heading");
    let version = latest.split_whitespace().next().unwrap().trim_matches(['[', ']']);
    assert_eq!(version, env!("CARGO_PKG_VERSION"), "CHANGELOG.md's latest release heading");
}
