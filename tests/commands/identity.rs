//! Identity.

use super::*;

#[test]
fn module_is_listed_as_bf() {
    let (_s, mut c) = start();
    let v = c.cmd(&["MODULE", "LIST"]);
    let names: Vec<String> = v
        .as_array()
        .iter()
        .map(|m| {
            m.pairs()
                .into_iter()
                .find(|(k, _)| k.as_str() == "name")
                .unwrap()
                .1
                .as_str()
                .to_string()
        })
        .collect();
    assert!(names.contains(&"bf".to_string()), "MODULE LIST names: {:?}", names);
}

#[test]
fn bloom_keys_have_type_mbbloom() {
    let (_s, mut c) = start();
    c.ok(&["BF.RESERVE", "r", "0.01", "100"]);
    assert_eq!(c.cmd(&["TYPE", "r"]), Value::Simple("MBbloom--".into()));
    c.cmd(&["BF.ADD", "a", "x"]);
    assert_eq!(c.cmd(&["TYPE", "a"]), Value::Simple("MBbloom--".into()));
}
