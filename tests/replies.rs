//! Replies that say what is wrong: an option given twice, an option of the other filter
//! family, a setting refused under its own name, sizes with units, windowed filters asked
//! for what they do not have, cuckoo settings named where they are the cause, and the
//! internal commands in no ACL category a user is granted. Each refusal changes nothing.

mod common;
use common::*;

/// BF.RESERVE with `EXPANSION` twice answers as RedisBloom 2.8 does (its grammar has room for
/// one, so it is the arity error); every other repeated option is refused by name, and nothing
/// is created.
#[test]
fn a_repeated_option_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    c.expect_err(
        &["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "EXPANSION", "3"],
        "ERR wrong number of arguments for 'bf.reserve' command",
    );
    for (cmd, name) in [
        (vec!["BF.RESERVE", "k", "0.01", "100", "COUNTING", "4", "COUNTING", "8"], "COUNTING"),
        (vec!["BF.RESERVE", "k", "0.01", "100", "WINDOW", "10s", "WINDOW", "ITEMS"], "WINDOW"),
        (vec!["BF.RESERVE", "k", "0.01", "100", "NONSCALING", "NONSCALING"], "NONSCALING"),
        (
            vec!["BF.RESERVE", "k", "0.01", "100", "LAYOUT", "BLOCKED", "LAYOUT", "STANDARD"],
            "LAYOUT",
        ),
        (vec!["BF.INSERT", "k", "EXPANSION", "2", "EXPANSION", "3", "ITEMS", "x"], "EXPANSION"),
        (vec!["BF.INSERT", "k", "CAPACITY", "10", "CAPACITY", "20", "ITEMS", "x"], "CAPACITY"),
        (vec!["BF.INSERT", "k", "ERROR", "0.1", "error", "0.2", "ITEMS", "x"], "ERROR"),
        (vec!["BF.INSERT", "k", "NOCREATE", "NOCREATE", "ITEMS", "x"], "NOCREATE"),
        (vec!["CF.RESERVE", "k", "1000", "BUCKETSIZE", "2", "BUCKETSIZE", "4"], "BUCKETSIZE"),
        (
            vec!["CF.RESERVE", "k", "1000", "MAXITERATIONS", "2", "MAXITERATIONS", "4"],
            "MAXITERATIONS",
        ),
        (vec!["CF.RESERVE", "k", "1000", "EXPANSION", "2", "EXPANSION", "4"], "EXPANSION"),
        (vec!["CF.INSERT", "k", "CAPACITY", "100", "CAPACITY", "200", "ITEMS", "x"], "CAPACITY"),
        (vec!["CF.INSERTNX", "k", "NOCREATE", "NOCREATE", "ITEMS", "x"], "NOCREATE"),
    ] {
        c.expect_err(&cmd, &format!("ERR {name} is given more than once"));
    }
    assert!(!c.exists_key("k"), "a refused command created the key");
}

/// An option of the other family is refused with words that say whose it is (RedisBloom
/// ignores `COUNTING` on CF.RESERVE and answers `ERR syntax error` or `Unknown argument
/// received` to `BUCKETSIZE` on BF.*); unknown words keep RedisBloom's answers.
#[test]
fn an_option_of_the_other_family_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    let bloom_option = |n: &str| {
        format!(
            "ERR {n} is an option of Bloom filters (BF.RESERVE, BF.INSERT), not of cuckoo filters"
        )
    };
    let cuckoo_option = |n: &str| {
        format!(
            "ERR {n} is an option of cuckoo filters (CF.RESERVE, CF.INSERT), not of Bloom filters"
        )
    };
    c.expect_err(&["CF.RESERVE", "k", "1000", "COUNTING", "4"], &bloom_option("COUNTING"));
    c.expect_err(&["CF.RESERVE", "k", "1000", "window", "10s"], &bloom_option("WINDOW"));
    c.expect_err(&["CF.RESERVE", "k", "1000", "LAYOUT", "BLOCKED"], &bloom_option("LAYOUT"));
    c.expect_err(&["CF.INSERT", "k", "ERROR", "0.1", "ITEMS", "x"], &bloom_option("ERROR"));
    c.expect_err(&["CF.INSERTNX", "k", "NONSCALING", "ITEMS", "x"], &bloom_option("NONSCALING"));
    c.expect_err(
        &["BF.RESERVE", "k", "0.01", "100", "BUCKETSIZE", "4"],
        &cuckoo_option("BUCKETSIZE"),
    );
    c.expect_err(
        &["BF.INSERT", "k", "MAXITERATIONS", "4", "ITEMS", "x"],
        &cuckoo_option("MAXITERATIONS"),
    );
    c.expect_err(
        &["BF.INSERT", "k", "fingerprint", "16", "ITEMS", "x"],
        &cuckoo_option("FINGERPRINT"),
    );
    assert!(!c.exists_key("k"), "a refused command created the key");
    // Unknown names: RedisBloom's answers.
    c.ok(&["CF.RESERVE", "k", "1000", "FOO", "4"]);
    c.expect_err(&["BF.INSERT", "b", "FOO", "ITEMS", "x"], "Unknown argument received");
}

/// CONFIG SET refusals name the setting as this server spells it (RedisBloom 8's name where
/// the server has it, Redis 8; `bf.*` elsewhere) and say when a value is not a number; the
/// old value stays.
#[test]
fn config_set_errors_name_the_setting_this_server_knows() {
    let s = Server::start();
    let mut c = s.conn();
    let unprefixed = c.engine().has_unprefixed_module_configs();
    let name =
        |rb8: &str, dotted: &str| if unprefixed { rb8.to_string() } else { dotted.to_string() };
    let err = c.err(&["CONFIG", "SET", "bf.error-rate", "0"]);
    let want = format!(
        "Value for `{}` must be in the range (0.000000, 1.000000)",
        name("bf-error-rate", "bf.error-rate")
    );
    assert!(err.ends_with(&want), "{err}");
    let err = c.err(&["CONFIG", "SET", "bf.error-rate", "abc"]);
    let want =
        format!("Value for `{}` is not a number: 'abc'", name("bf-error-rate", "bf.error-rate"));
    assert!(err.ends_with(&want), "{err}");
    let err = c.err(&["CONFIG", "SET", "bf.initial-size", "0"]);
    let want = format!(
        "Value for `{}` must be in the range [1, 1073741824]",
        name("bf-initial-size", "bf.initial-size")
    );
    assert!(err.ends_with(&want), "{err}");
    let err = c.err(&["CONFIG", "SET", "bf.cf-bucket-size", "256"]);
    let want = format!(
        "Value for `{}` must be in the range [1, 255]",
        name("cf-bucket-size", "bf.cf-bucket-size")
    );
    assert!(err.ends_with(&want), "{err}");
    assert_eq!(c.config_get("bf.error-rate").as_deref(), Some("0.01"));
    assert_eq!(c.config_get("bf.initial-size").as_deref(), Some("100"));
}

/// `bf.max-filter-bytes` takes the units of redis.conf sizes and `t`/`tb`, as a module
/// argument and in CONFIG SET; a refusal names the units or the minimum.
#[test]
fn max_filter_bytes_takes_units_up_to_terabytes() {
    let s = Server::start_with(ServerOpts::new().module_args(&["max-filter-bytes", "1tb"]));
    let mut c = s.conn();
    assert_eq!(c.config_get("bf.max-filter-bytes").as_deref(), Some("1099511627776"));
    for (value, bytes) in
        [("2TB", 2u64 << 40), ("3t", 3_000_000_000_000), ("512mb", 512 << 20), ("8192", 8192)]
    {
        c.ok(&["CONFIG", "SET", "bf.max-filter-bytes", value]);
        assert_eq!(c.config_get("bf.max-filter-bytes"), Some(bytes.to_string()), "{value}");
    }
    let err = c.err(&["CONFIG", "SET", "bf.max-filter-bytes", "1pb"]);
    assert!(err.contains("optional unit k, kb, m, mb, g, gb, t or tb, got '1pb'"), "{err}");
    let err = c.err(&["CONFIG", "SET", "bf.max-filter-bytes", "100"]);
    assert!(err.contains("must be at least 4096 bytes, got '100'"), "{err}");
    assert_eq!(c.config_get("bf.max-filter-bytes").as_deref(), Some("8192"));
    let r = Server::try_start_in(
        std::sync::Arc::new(TempDir::new("mfb")),
        ServerOpts::new().module_args(&["max-filter-bytes", "1xb"]),
    );
    match r {
        Ok(s) => panic!("started with max-filter-bytes 1xb: {}", s.log_tail(5)),
        Err(log) => {
            assert!(log.contains("optional unit k, kb, m, mb, g, gb, t or tb, got '1xb'"), "{log}")
        }
    }
}

/// A windowed filter asked to delete or to show layers says why it cannot; the filter keeps
/// its items. Other types keep the wrong-type error.
#[test]
fn windowed_filters_say_why_they_have_no_deletes_or_layers() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "w", "0.01", "100", "WINDOW", "ITEMS"]);
    assert_eq!(c.int(&["BF.ADD", "w", "a"]), 1);
    let no_delete = "ERR a windowed filter has no deletes: its items expire by themselves (BF.DEL and BF.MDEL take filters created with COUNTING 4 or COUNTING 8)";
    c.expect_err(&["BF.DEL", "w", "a"], no_delete);
    c.expect_err(&["BF.MDEL", "w", "a", "b"], no_delete);
    c.expect_err(
        &["BF.DEBUG", "w"],
        "ERR a windowed filter has no layers to show: BF.STATS describes its window and generations",
    );
    assert_eq!(c.int(&["BF.EXISTS", "w", "a"]), 1);
    c.ok(&["SET", "str", "x"]);
    c.ok(&["CF.RESERVE", "cf", "100"]);
    for key in ["str", "cf"] {
        assert!(c.err(&["BF.DEL", key, "a"]).starts_with("WRONGTYPE"), "{key}");
        assert!(c.err(&["BF.DEBUG", key]).starts_with("WRONGTYPE"), "{key}");
    }
}

/// A cuckoo filter that cannot be made from the `cf-*` settings names the settings, not an
/// option the user did not type.
#[test]
fn cuckoo_errors_name_what_the_user_typed_or_the_settings() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["CONFIG", "SET", "bf.cf-bucket-size", "255"]);
    c.ok(&["CONFIG", "SET", "bf.cf-initial-size", "100"]);
    let settings =
        "ERR Could not create filter: cf-initial-size (100) is below 2 * cf-bucket-size (255)";
    c.expect_err(&["CF.ADD", "k", "a"], settings);
    c.expect_err(&["CF.ADDNX", "k", "a"], settings);
    let r = c.cmd(&["CF.INSERT", "k", "ITEMS", "a"]);
    assert_eq!(r.err_text(), settings, "{r:?}");
    let r = c.cmd(&["CF.INSERTNX", "k", "ITEMS", "a"]);
    assert_eq!(r.err_text(), settings, "{r:?}");
    // CAPACITY typed, the bucket size from the setting: RedisBloom's CF.INSERT words.
    c.expect_err(
        &["CF.INSERT", "k", "CAPACITY", "100", "ITEMS", "a"],
        "Capacity must be in the range [cf-bucket-size * 2, 1073741824]",
    );
    // CF.RESERVE: RedisBloom's words, which name its BUCKETSIZE option.
    c.expect_err(
        &["CF.RESERVE", "k", "100", "BUCKETSIZE", "100"],
        "Capacity must be in the range [2 * BUCKETSIZE, 1073741824]",
    );
    assert!(!c.exists_key("k"));
}

/// The internal commands (BF.REPLCONF, BF.WINDOWADD) and the tests-only BF.DEBUGCLOCK are in
/// no module ACL category: `ACL CAT bloom` lists every other BF command and none of them, and
/// a `+@bloom` user may not run BF.DEBUGCLOCK.
#[test]
fn internal_commands_are_in_no_category_a_user_is_granted() {
    let s = Server::start_with(ServerOpts::new().module_args(&["window-debug-clock", "yes"]));
    let mut c = s.conn();
    if !c.engine().has_module_acl_categories() {
        // Redis 7.0: no module categories; `+@bloom` is refused outright.
        let r = c.cmd(&["ACL", "SETUSER", "u", "on", ">pw", "~*", "+@bloom"]);
        assert!(r.is_err(), "{r:?}");
        return;
    }
    let listed: Vec<String> =
        c.cmd(&["ACL", "CAT", "bloom"]).as_array().iter().map(|v| v.as_str().to_string()).collect();
    for internal in ["bf.windowadd", "bf.debugclock", "bf.replconf"] {
        assert!(
            !listed.contains(&internal.to_string()),
            "ACL CAT bloom lists {internal}: {listed:?}"
        );
    }
    for public in ["bf.add", "bf.stats", "bf.scandump", "bf.del"] {
        assert!(listed.contains(&public.to_string()), "ACL CAT bloom lacks {public}: {listed:?}");
    }
    c.ok(&["ACL", "SETUSER", "u", "on", ">pw", "~*", "+@bloom"]);
    let mut u = s.conn();
    u.ok(&["AUTH", "u", "pw"]);
    assert_eq!(u.int(&["BF.ADD", "k", "a"]), 1);
    let r = u.cmd(&["BF.DEBUGCLOCK", "GET"]);
    assert!(r.is_err(), "a +@bloom user ran BF.DEBUGCLOCK: {r:?}");
}
