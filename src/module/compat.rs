//! `bf.compat`: the earliest release that must be able to read what this server writes, so an
//! operator can upgrade (replicas first, then the primary), run, and still roll back until they
//! raise it — as databases let their feature compatibility lag their binaries.
//!
//! It is a module argument (`loadmodule … compat 0.1`), read before the native types are
//! registered, because it decides the encoding version the `MBbloom--` type is registered with
//! (Redis writes a type's registered version on every value of it). `CONFIG GET bf.compat`
//! shows it; it cannot change while the server runs (raise it with a restart).
//!
//! Under `bf.compat 0.1` the module writes only what 0.1 reads — RDB values and aux data, DUMP
//! payloads, SCANDUMP chunks, the replication stream and AOF — and refuses, with
//! [`Compat::refusal`], to create what 0.1 cannot represent: `BF.MERGE` and `LIKE` (0.1 has no
//! such commands to replicate), filters in valkey-bloom's layout (`SEED`, `TIGHTENING`,
//! `VALIDATESCALETO`, `BF.LOAD`, `RESTORE` of its payloads: 0.1 has no `bloomfltr` type), and
//! merged filters' members (no 0.1 encoding holds them). Such values already saved are refused
//! at load, with a log line that says to raise `bf.compat`.

use std::sync::atomic::{AtomicU8, Ordering};

/// A release whose formats the module can limit itself to; ordered oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Release {
    /// The pre-release (main before 1.0): `MBbloom--` 514, no merges, no valkey-bloom filters.
    V0_1,
    /// This release: everything it writes.
    V1_0,
}

impl Release {
    /// The release as `bf.compat` names it.
    pub fn name(self) -> &'static str {
        match self {
            Release::V0_1 => "0.1",
            Release::V1_0 => "1.0",
        }
    }

    /// `0.1`, `0.1.0`, `1.0`, `1.0.0`.
    pub fn parse(text: &str) -> Option<Release> {
        match text.trim() {
            "0.1" | "0.1.0" => Some(Release::V0_1),
            "1.0" | "1.0.0" => Some(Release::V1_0),
            _ => None,
        }
    }

    fn from_u8(v: u8) -> Release {
        if v == Release::V0_1 as u8 { Release::V0_1 } else { Release::V1_0 }
    }
}

/// The release this server writes for; the latest until a module argument says otherwise.
static COMPAT: AtomicU8 = AtomicU8::new(Release::V1_0 as u8);

/// `bf.compat` in force.
pub fn compat() -> Release {
    Release::from_u8(COMPAT.load(Ordering::Relaxed))
}

/// Whether everything written must stay readable by 0.1.
pub fn writes_for_0_1() -> bool {
    compat() < Release::V1_0
}

/// Sets `bf.compat` from its module argument's value, before the types are registered.
pub fn set_from_arg(value: &str) -> Result<Release, String> {
    let release = Release::parse(value).ok_or_else(|| {
        format!("compat must be a release this build can write for (0.1 or 1.0), got '{value}'")
    })?;
    COMPAT.store(release as u8, Ordering::Relaxed);
    Ok(release)
}

/// What needs a later `bf.compat` than the one in force, and its refusal.
pub struct Compat;

impl Compat {
    /// `None` when `what` (new in `since`) may be written under the `bf.compat` in force;
    /// otherwise the error reply's text.
    pub fn refusal(what: &str, since: Release) -> Option<String> {
        let now = compat();
        (now < since).then(|| {
            format!(
                "ERR {what} needs bf.compat {} or later: this server writes only what {} reads \
                 (raise bf.compat once no server runs {} any more)",
                since.name(),
                now.name(),
                now.name()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_in_both_spellings_and_order_oldest_first() {
        assert_eq!(Release::parse("0.1"), Some(Release::V0_1));
        assert_eq!(Release::parse("1.0.0"), Some(Release::V1_0));
        assert_eq!(Release::parse("2.0"), None);
        assert_eq!(Release::parse(""), None);
        assert!(Release::V0_1 < Release::V1_0);
        for r in [Release::V0_1, Release::V1_0] {
            assert_eq!(Release::parse(r.name()), Some(r));
            assert_eq!(Release::from_u8(r as u8), r);
        }
    }
}
