//! A second config name for a setting (valkey-bloom's `bf.bloom-*` names): registered beside
//! the setting's own, reading and writing the same value.
//!
//! Redis applies each registered config once when the module's configs load
//! (`RedisModule_LoadConfigs`): the value redis.conf gives that name, or else the default it
//! was registered with. Two names of one setting would each be applied, and the later one's
//! default would undo a value redis.conf gave the earlier name. So an alias, registered after
//! the setting's own name, skips a load-time value equal to the setting's starting value (its
//! default, or its module argument): what redis.conf gave either name stands.

use std::sync::atomic::{AtomicBool, Ordering};

use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{RedisError, RedisString};

/// Whether the module's configs are being loaded (between registering them and the end of
/// `RedisModule_LoadConfigs`).
static LOADING: AtomicBool = AtomicBool::new(false);

/// Marks the start of config loading.
pub fn loading_starts() {
    LOADING.store(true, Ordering::Relaxed);
}

/// Marks the end of config loading: from now on every set through an alias applies.
pub fn loading_ends() {
    LOADING.store(false, Ordering::Relaxed);
}

/// Another name of the setting held by `target`, whose starting value is `start`.
pub struct Alias<T: 'static> {
    target: &'static T,
    start: String,
}

impl<T> Alias<T> {
    /// An alias of `target`, for the whole life of the process (a config's data must outlive
    /// the module's registration, which is never undone before exit).
    pub fn leak(target: &'static T, start: &str) -> &'static Alias<T> {
        Box::leak(Box::new(Alias { target, start: start.to_string() }))
    }

    /// Whether a set of `value` is the default Redis applies while configs load.
    fn skips(&self, value: &str) -> bool {
        LOADING.load(Ordering::Relaxed) && value == self.start
    }
}

impl<T: ConfigurationValue<i64>> ConfigurationValue<i64> for Alias<T> {
    fn get(&self, ctx: &ConfigurationContext) -> i64 {
        self.target.get(ctx)
    }
    fn set(&self, ctx: &ConfigurationContext, val: i64) -> Result<(), RedisError> {
        if self.skips(&val.to_string()) { Ok(()) } else { self.target.set(ctx, val) }
    }
}

impl<T: ConfigurationValue<bool>> ConfigurationValue<bool> for Alias<T> {
    fn get(&self, ctx: &ConfigurationContext) -> bool {
        self.target.get(ctx)
    }
    fn set(&self, ctx: &ConfigurationContext, val: bool) -> Result<(), RedisError> {
        let text = if val { "yes" } else { "no" };
        if self.skips(text) { Ok(()) } else { self.target.set(ctx, val) }
    }
}

impl<T: ConfigurationValue<RedisString>> ConfigurationValue<RedisString> for Alias<T> {
    fn get(&self, ctx: &ConfigurationContext) -> RedisString {
        self.target.get(ctx)
    }
    fn set(&self, ctx: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        if self.skips(&val.to_string_lossy()) { Ok(()) } else { self.target.set(ctx, val) }
    }
}
