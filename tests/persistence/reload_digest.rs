//! DEBUG RELOAD, digests.

use super::*;

#[test]
fn reload_keeps_every_item_and_digest() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    let before = snapshot(&mut c, &fx);
    c.ok(&["DEBUG", "RELOAD"]);
    assert_same(&mut c, &fx, &before, "after DEBUG RELOAD");
    // a reloaded filter still scales
    let more = items("after-reload", 2000);
    let r = c.madd("scaling", &more);
    c.assert_all_present("scaling", &added(&more, &r));
    assert!(c.bf_info("scaling").filters > before[0].info.filters);
}

#[test]
fn digest_changes_when_a_new_item_is_added_and_only_depends_on_content() {
    // Fixed seeds, so two filters with the same parameters and items hold the same bits.
    let s = Server::start_with(ServerOpts::new().module_args(&["random-seeds", "no"]));
    let mut c = s.conn();
    c.ok(&["BF.RESERVE", "a", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "b", "0.01", "100"]);
    let empty = c.digest("a");
    assert_eq!(c.digest("b"), empty, "two identical empty filters");
    assert_ne!(empty, "0000000000000000000000000000000000000000", "digest of an existing key");
    c.cmd(&["BF.ADD", "a", "x"]);
    let one = c.digest("a");
    assert_ne!(one, empty, "digest unchanged after adding an item");
    c.cmd(&["BF.ADD", "b", "y"]);
    assert_ne!(c.digest("b"), one, "different items, same digest");
    c.cmd(&["BF.ADD", "a", "x"]);
    assert_eq!(c.digest("a"), one, "re-adding a present item changed the digest");
    c.ok(&["BF.RESERVE", "c", "0.01", "100", "EXPANSION", "4"]);
    assert_ne!(c.digest("c"), empty, "expansion is part of the value");
    c.ok(&["BF.RESERVE", "d", "0.01", "100", "NONSCALING"]);
    assert_ne!(c.digest("d"), empty, "nonscaling is part of the value");
}

/// With random seeds (the default) two filters built alike hold different bits, so nobody can
/// precompute items that collide in someone else's filter; the seed is part of the value.
#[test]
fn random_seeds_make_equal_filters_differ_and_travel_with_the_value() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(c.config_get("bf.random-seeds").as_deref(), Some("yes"));
    c.ok(&["BF.RESERVE", "a", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "b", "0.01", "100"]);
    assert_ne!(c.digest("a"), c.digest("b"), "two filters got the same seed");
    c.cmd(&["BF.MADD", "a", "x", "y"]);
    let before = c.digest("a");
    c.ok(&["DEBUG", "RELOAD"]);
    assert_eq!(c.digest("a"), before, "reload changed the seed or bits");
    c.ok(&["CONFIG", "SET", "bf.random-seeds", "no"]);
    c.ok(&["BF.RESERVE", "f1", "0.01", "100"]);
    c.ok(&["BF.RESERVE", "f2", "0.01", "100"]);
    assert_eq!(c.digest("f1"), c.digest("f2"), "fixed seeds must give equal filters");
}
