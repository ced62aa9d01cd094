//! Arity, wrong type.

use super::*;

#[test]
fn arity_errors_name_the_command() {
    let (_s, mut c) = start();
    c.cmd(&["BF.ADD", "k", "a"]);
    let cases: Vec<Vec<&str>> = vec![
        vec!["bf.reserve", "x", "0.01"],
        vec!["bf.reserve", "x"],
        vec!["bf.add", "k"],
        vec!["bf.add", "k", "a", "b"],
        vec!["bf.madd", "k"],
        vec!["bf.exists", "k"],
        vec!["bf.exists", "k", "a", "b"],
        vec!["bf.mexists", "k"],
        vec!["bf.insert", "k"],
        vec!["bf.info"],
        vec!["bf.info", "k", "CAPACITY", "SIZE"],
        vec!["bf.card"],
        vec!["bf.card", "k", "a"],
        vec!["bf.debug"],
        vec!["bf.scandump", "k"],
        vec!["bf.scandump", "k", "0", "x"],
        vec!["bf.loadchunk", "k", "1"],
        vec!["bf.loadchunk", "k", "1", "x", "y"],
    ];
    for args in cases {
        let want = format!("ERR wrong number of arguments for '{}' command", args[0]);
        c.expect_err(&args, &want);
    }
    assert_no_key(&mut c, "x");
    assert_eq!(c.bf_card("k"), 1);
}

#[test]
fn every_command_on_a_string_key_is_wrongtype() {
    let (_s, mut c) = start();
    c.ok(&["SET", "s", "x"]);
    let cases: Vec<Vec<&str>> = vec![
        vec!["BF.RESERVE", "s", "0.01", "100"],
        vec!["BF.ADD", "s", "a"],
        vec!["BF.MADD", "s", "a", "b"],
        vec!["BF.EXISTS", "s", "a"],
        vec!["BF.MEXISTS", "s", "a", "b"],
        vec!["BF.INSERT", "s", "ITEMS", "a"],
        vec!["BF.INSERT", "s", "NOCREATE", "ITEMS", "a"],
        vec!["BF.INFO", "s"],
        vec!["BF.INFO", "s", "CAPACITY"],
        vec!["BF.CARD", "s"],
        vec!["BF.DEBUG", "s"],
        vec!["BF.SCANDUMP", "s", "0"],
        vec!["BF.LOADCHUNK", "s", "1", "xxxxxxxxxxxxxxxxxxxxxxxxxxxx"],
    ];
    for args in cases {
        c.expect_err(&args, WRONGTYPE);
    }
    assert_eq!(c.cmd(&["GET", "s"]), Value::Bulk(Some(b"x".to_vec())));
    c.cmd(&["RPUSH", "l", "x"]);
    c.expect_err(&["BF.EXISTS", "l", "a"], WRONGTYPE);
    c.expect_err(&["BF.ADD", "l", "a"], WRONGTYPE);
}
