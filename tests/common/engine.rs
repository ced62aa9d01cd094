//! Which server the tests run on: [`Engine`], read from `INFO server` by [`Conn::engine`].
//! Tests whose expected behaviour depends on the server (ACL categories, unprefixed configs,
//! active defrag) ask it rather than inferring it from what the module managed to do.

use std::fmt;

use super::resp::Conn;

/// The server kind and version. Valkey reports `redis_version:7.2.4` for compatibility, its
/// own version in `valkey_version`, and `server_name:valkey`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    pub valkey: bool,
    /// (major, minor, patch) of Redis, or of Valkey when `valkey`.
    pub version: (u32, u32, u32),
}

impl Engine {
    /// Parses the text of `INFO server`.
    pub fn from_info(info: &str) -> Engine {
        let field = |name: &str| {
            let prefix = format!("{}:", name);
            info.lines().find_map(|l| l.strip_prefix(&prefix).map(|s| s.trim().to_string()))
        };
        let valkey = field("server_name").as_deref() == Some("valkey");
        let text = if valkey { field("valkey_version") } else { field("redis_version") };
        let text = text.unwrap_or_else(|| panic!("no server version in INFO server:\n{}", info));
        let mut parts = text.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let mut next = || parts.next().unwrap_or(0);
        Engine { valkey, version: (next(), next(), next()) }
    }

    pub fn is_redis_at_least(&self, major: u32, minor: u32) -> bool {
        !self.valkey && (self.version.0, self.version.1) >= (major, minor)
    }

    /// Module commands can join ACL categories (`RedisModule_SetCommandACLCategories`):
    /// Redis 7.2+ and every Valkey (8.0+).
    pub fn has_module_acl_categories(&self) -> bool {
        self.valkey || self.is_redis_at_least(7, 2)
    }

    /// A module type's `aux_save2` is called instead of `aux_save`, and an aux field it writes
    /// nothing to is left out of the RDB: Redis 7.2+ and every Valkey.
    pub fn skips_empty_module_aux(&self) -> bool {
        self.valkey || self.is_redis_at_least(7, 2)
    }

    /// Commands can be flagged `internal` (`RedisModule_CreateCommand`): Redis 8.0+, where such a
    /// command is unknown to every connection but the replication link, AOF loading and
    /// cluster-internal ones, and absent from `COMMAND`.
    pub fn has_internal_commands(&self) -> bool {
        self.is_redis_at_least(8, 0)
    }

    /// `COMMANDLOG` (slow, large-request and large-reply logs, the slow log's successor):
    /// Valkey 8.1+.
    pub fn has_commandlog(&self) -> bool {
        self.valkey && (self.version.0, self.version.1) >= (8, 1)
    }

    /// Modules can register configs without the `<module>.` prefix
    /// (`REDISMODULE_CONFIG_UNPREFIXED`): Redis 8.0+, so `bf-error-rate` is a config name there.
    pub fn has_unprefixed_module_configs(&self) -> bool {
        self.is_redis_at_least(8, 0)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b, c) = self.version;
        write!(f, "{} {}.{}.{}", if self.valkey { "Valkey" } else { "Redis" }, a, b, c)
    }
}

impl Conn {
    /// Which server this is and its version, from `INFO server`.
    pub fn engine(&mut self) -> Engine {
        let v = self.cmd(&["INFO", "server"]);
        Engine::from_info(&String::from_utf8_lossy(v.as_bytes()))
    }

    /// The `ver` `MODULE LIST` shows for the module named `name` (panics if it is not loaded).
    pub fn module_ver(&mut self, name: &str) -> i64 {
        let modules = self.cmd(&["MODULE", "LIST"]);
        let module = modules
            .as_array()
            .iter()
            .map(|m| m.as_array())
            .find(|m| m.get(1).map(|v| v.as_str() == name).unwrap_or(false))
            .unwrap_or_else(|| panic!("no module {name} in MODULE LIST: {modules:?}"));
        assert_eq!(module[2].as_str(), "ver");
        module[3].as_int()
    }
}

/// A version `major.minor.patch` as `MODULE LIST` encodes it (as RedisBloom encodes its own):
/// major × 10000 + minor × 100 + patch.
pub fn encoded_version(version: &str) -> i64 {
    let parts: Vec<i64> =
        version.split('.').map(|p| p.parse().expect("a numeric version")).collect();
    assert_eq!(parts.len(), 3, "major.minor.patch: {version}");
    parts[0] * 10000 + parts[1] * 100 + parts[2]
}
