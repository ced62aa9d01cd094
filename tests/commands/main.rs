//! Replies and errors of every BF.* command, in RESP2 and RESP3: one test binary, one module per
//! group of commands (the helpers below are shared by all of them).

#[path = "../common/mod.rs"]
mod common;
pub(crate) use common::*;

mod add_exists;
mod arity_wrongtype;
mod full_and_scaling;
mod identity;
mod insert;
mod reserve;
mod scandump_loadchunk;
mod server_integration;
mod sizing_info;

fn start() -> (Server, Conn) {
    let s = Server::start();
    let c = s.conn();
    (s, c)
}

/// A server whose filters get the fixed seed 0, for tests that assert exact replies about items
/// added to a nearly full filter: with random seeds a false positive (about 1 run in 40) turns
/// an expected 1 or refusal into a 0.
fn start_fixed_seeds() -> (Server, Conn) {
    let s = Server::start_with(ServerOpts::new().module_args(&["random-seeds", "no"]));
    let c = s.conn();
    (s, c)
}

const RANGE_ERROR_RATE: &str = "ERR error rate must be in the range (0.000000, 1.000000)";
const RANGE_CAPACITY: &str = "ERR capacity must be in the range [1, 1073741824]";
const RANGE_EXPANSION: &str = "ERR expansion must be in the range [0, 32768]";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// One `BF.DEBUG` layer line split into its `name:value` fields.
fn layer_fields(line: &str) -> Vec<(String, String)> {
    line.split(' ')
        .map(|f| {
            let (k, v) = f
                .split_once(':')
                .unwrap_or_else(|| panic!("bad BF.DEBUG field {:?} in {:?}", f, line));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn layer_field(line: &str, name: &str) -> i64 {
    layer_fields(line)
        .into_iter()
        .find(|(k, _)| k == name)
        .unwrap_or_else(|| panic!("no {} in {:?}", name, line))
        .1
        .parse()
        .unwrap()
}

fn assert_no_key(c: &mut Conn, key: &str) {
    assert!(!c.exists_key(key), "key {:?} must not have been created", key);
}
