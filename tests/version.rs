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

/// The release headings of CHANGELOG.md ("## 1.0.0 …" or "## [1.0.0] …"), Unreleased left out.
fn changelog_releases() -> Vec<String> {
    repo_file("CHANGELOG.md")
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter(|h| !h.starts_with("Unreleased"))
        .map(|h| h.split_whitespace().next().unwrap().trim_matches(['[', ']']).to_string())
        .collect()
}

#[test]
fn command_docs_name_a_release_of_the_changelog_for_every_command_and_change() {
    let releases = changelog_releases();
    let s = Server::start();
    let mut c = s.conn();
    let docs = c.cmd(&["COMMAND", "DOCS"]);
    let docs = docs.as_array();
    let mut ours = 0;
    for pair in docs.chunks(2) {
        let fields = pair[1].as_array();
        let field =
            |name: &str| fields.chunks(2).find(|f| f[0].as_str() == name).map(|f| f[1].clone());
        if field("module").map(|m| m.as_str() != "bf").unwrap_or(true) {
            continue;
        }
        ours += 1;
        let name = pair[0].as_str();
        let since = field("since").expect("since").as_str().to_string();
        assert!(releases.contains(&since), "{name}: since {since} is no release of CHANGELOG.md");
        let history = field("history");
        for entry in history.as_ref().map(|h| h.as_array()).unwrap_or_default() {
            let release = entry.as_array()[0].as_str().to_string();
            assert!(releases.contains(&release), "{name}: history names {release}");
            assert!(encoded_version(&release) > encoded_version(&since), "{name}: {release}");
        }
    }
    // 34 commands; Redis 8 leaves the two internal ones (BF.REPLCONF, BF.WINDOWADD) out.
    assert!(ours >= 32, "COMMAND DOCS lists the module's commands ({ours})");
    let mut since_of = |name: &str| {
        let d = c.cmd(&["COMMAND", "DOCS", name]);
        let fields = d.as_array()[1].as_array();
        fields.chunks(2).find(|f| f[0].as_str() == "since").unwrap()[1].as_str().to_string()
    };
    // BF.ADD came with the first release; BF.MERGE with 1.0.0.
    assert_eq!(since_of("bf.add"), "0.1.0");
    assert_eq!(since_of("bf.merge"), "1.0.0");
}
