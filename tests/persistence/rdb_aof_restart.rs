//! RDB and AOF restarts.

use super::*;

#[test]
fn rdb_save_and_restart_keeps_every_item() {
    let s = Server::start();
    let mut c = s.conn();
    let fx = build_fixture(&mut c);
    let before = snapshot(&mut c, &fx);
    c.ok(&["SAVE"]);
    drop(c);
    let s2 = s.restart(&["NOSAVE"], ServerOpts::new());
    let mut c = s2.conn();
    assert_eq!(c.int(&["DBSIZE"]), fx.len() as i64);
    assert_same(&mut c, &fx, &before, "after RDB restart");
}

fn aof_restart_keeps_every_item(preamble: &str) {
    let opts = ServerOpts::new().arg("appendonly", "yes").arg("aof-use-rdb-preamble", preamble);
    let s = Server::start_with(opts.clone());
    let dir = s.dir();
    let mut c = s.conn();
    let mut fx = build_fixture(&mut c);
    c.rewrite_aof();
    if preamble == "no" {
        // the rewritten base file holds the filters as commands emitted by the module
        let base = std::fs::read_dir(dir.path().join("appendonlydir"))
            .expect("appendonlydir")
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains(".base.aof"))
            .expect("a base AOF file");
        let text = std::fs::read(&base).unwrap();
        let layer_bytes: i64 = fx.iter().map(|b| c.bf_info(&b.key).size).sum();
        assert!(
            text.len() as i64 > layer_bytes / 2,
            "base AOF is {} bytes, too small to hold {} bytes of filters",
            text.len(),
            layer_bytes
        );
        assert!(!text.starts_with(b"REDIS"), "base AOF has an RDB preamble although disabled");
    }
    // writes after the rewrite go to the AOF tail
    let tail = items("tail", 600);
    let r = c.madd("scaling", &tail);
    fx[0].items.extend(added(&tail, &r));
    c.cmd(&["BF.ADD", "auto", "tail-item"]);
    fx[2].items.push("tail-item".into());
    c.cmd(&["BF.INSERT", "created-after", "CAPACITY", "10", "ITEMS", "x", "y", "z"]);
    fx.push(Built { key: "created-after".into(), items: vec!["x".into(), "y".into(), "z".into()] });
    c.cmd(&["BF.MADD", "nonscaling", "t1", "t2"]);
    fx[1].items.extend(["t1".to_string(), "t2".to_string()]);
    let before = snapshot(&mut c, &fx);
    drop(c);
    let s2 = s.restart(&[], opts);
    let mut c = s2.conn();
    assert_eq!(c.int(&["DBSIZE"]), fx.len() as i64);
    assert_same(&mut c, &fx, &before, "after AOF restart");
}

#[test]
fn aof_rewrite_and_restart_keeps_every_item() {
    aof_restart_keeps_every_item("no");
}

#[test]
fn aof_rewrite_with_rdb_preamble_and_restart_keeps_every_item() {
    aof_restart_keeps_every_item("yes");
}
