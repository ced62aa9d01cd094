//! Corrupt RESTORE payloads (the set-up, bystanders and probes are `common::hostile`).

use super::*;

#[test]
fn restore_of_truncated_payloads_is_refused_and_server_survives() {
    let mut fx = Hostile::start();
    let payload = fx.payload.clone();
    let body_len = payload.len() - 10;
    let trailer = payload[body_len..body_len + 2].to_vec();
    let mut cuts: Vec<usize> = (1..24).collect();
    cuts.extend((1..30).map(|i| i * body_len / 30));
    cuts.push(body_len - 1);
    for (i, cut) in cuts.iter().enumerate() {
        // truncated body with a valid trailer: reaches the module's loader
        let mut p = payload[..*cut].to_vec();
        p.extend_from_slice(&trailer);
        p.extend_from_slice(&[0u8; 8]);
        fix_dump_crc(&mut p);
        fx.try_restore(&format!("t{}", i), &p, false);
        // plain truncation: the CRC no longer matches
        let raw = &payload[..cut + 10];
        let v = fx.conn.cmd(&[b"RESTORE".as_slice(), b"raw", b"0", raw]);
        assert!(v.is_err(), "RESTORE of a raw truncation at {} -> {:?}", cut, v);
    }
    assert_eq!(fx.tally.accepted, 0, "truncated payloads were accepted");
    fx.assert_intact();
}

#[test]
fn restore_with_flipped_bytes_never_crashes() {
    let mut fx = Hostile::start();
    let payload = fx.payload.clone();
    let parsed = fx.parsed();
    // every byte outside the big bit arrays, plus random ones inside them
    let body_len = payload.len() - 10;
    let mut positions: Vec<usize> = Vec::new();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut pos = 0usize;
    {
        // walk the fields to find string payload ranges
        let mut ranges = Vec::new();
        let mut reser = vec![parsed.type_byte];
        reser.extend_from_slice(&parsed.module_id);
        pos += reser.len();
        for f in &parsed.fields {
            let mut one = ModulePayload { fields: vec![f.clone()], ..parsed.clone() }.serialize();
            one.truncate(one.len() - 10 - 1); // drop trailer and EOF opcode
            let flen = one.len() - reser.len();
            if let Field::Str { bytes, .. } = f {
                ranges.push((pos + flen - bytes.len(), pos + flen));
            }
            pos += flen;
        }
        for p in 0..body_len {
            if !ranges.iter().any(|(a, b)| p >= *a && p < *b) {
                positions.push(p);
            }
        }
        for _ in 0..60 {
            positions.push(rng.below(body_len as u64) as usize);
        }
    }
    for (i, p) in positions.iter().enumerate() {
        for (j, x) in [0xFFu8, 0x01, 0x80].iter().enumerate() {
            let mut m = payload.clone();
            m[*p] ^= x;
            fix_dump_crc(&mut m);
            fx.try_restore(&format!("f{}-{}", i, j), &m, true);
        }
    }
    // a flipped byte with the old CRC is refused by the server itself
    let mut m = payload.clone();
    m[5] ^= 0xFF;
    assert!(fx.conn.cmd(&[b"RESTORE".as_slice(), b"crc", b"0", &m]).is_err());
    assert!(fx.tally.refused > 0, "no corrupt payload was refused");
    // whatever was accepted must survive a save/load cycle
    fx.assert_intact_after_reload();
}

#[test]
fn restore_with_patched_fields_never_crashes() {
    let mut fx = Hostile::start();
    let parsed = fx.parsed();
    let mut n = 0;
    for (i, f) in parsed.fields.iter().enumerate() {
        let variants: Vec<Field> = match f {
            Field::Uint(v) => [
                0,
                1,
                v.wrapping_add(1),
                v.wrapping_sub(1),
                v.wrapping_mul(2),
                u32::MAX as u64,
                1 << 40,
                1 << 63,
                u64::MAX,
            ]
            .iter()
            .map(|x| Field::Uint(*x))
            .collect(),
            Field::Sint(v) => [0, -1, v.wrapping_add(1), i64::MAX, i64::MIN]
                .iter()
                .map(|x| Field::Sint(*x))
                .collect(),
            Field::Double(d) => {
                [0.0, -d, 1.0, 2.0, f64::NAN, f64::INFINITY, 1e-320, d * 2.0, 1e-300]
                    .iter()
                    .map(|x| Field::Double(*x))
                    .collect()
            }
            Field::Float(d) => [0.0, -d, f32::NAN].iter().map(|x| Field::Float(*x)).collect(),
            Field::Str { bytes, lzf: None } => {
                let mut v = vec![
                    Field::Str {
                        bytes: bytes[..bytes.len().saturating_sub(1)].to_vec(),
                        lzf: None,
                    },
                    Field::Str { bytes: [bytes.clone(), vec![0]].concat(), lzf: None },
                    Field::Str { bytes: vec![], lzf: None },
                    Field::Str { bytes: [bytes.clone(), bytes.clone()].concat(), lzf: None },
                ];
                if bytes.len() > 8 {
                    v.push(Field::Str { bytes: bytes[8..].to_vec(), lzf: None });
                }
                v
            }
            _ => vec![],
        };
        for v in variants {
            let mut p = parsed.clone();
            p.fields[i] = v;
            fx.try_restore(&format!("p{}", n), &p.serialize(), true);
            n += 1;
        }
        // drop the field entirely, or duplicate it
        let mut p = parsed.clone();
        p.fields.remove(i);
        fx.try_restore(&format!("p{}", n), &p.serialize(), true);
        n += 1;
        let mut p = parsed.clone();
        p.fields.insert(i, f.clone());
        fx.try_restore(&format!("p{}", n), &p.serialize(), true);
        n += 1;
    }
    assert!(fx.tally.refused > 0);
    fx.assert_intact_after_reload();
}

/// Index of the first unsigned field holding `value`.
fn find_uint(p: &ModulePayload, value: u64, what: &str) -> usize {
    p.fields.iter().position(|f| *f == Field::Uint(value)).unwrap_or_else(|| {
        panic!(
            "no unsigned field equal to {} ({}) in the payload: {:?}",
            value,
            what,
            p.fields.iter().filter(|f| !matches!(f, Field::Str { .. })).collect::<Vec<_>>()
        )
    })
}

#[test]
fn restore_with_patched_layer_count_bits_or_capacity_is_refused() {
    let mut fx = Hostile::start();
    assert_eq!(fx.conn.bf_info("src").filters, 3);
    let parsed = fx.parsed();
    let layers = find_uint(&parsed, 3, "layer count");
    let bits0 = find_uint(&parsed, 11072, "bits of layer 0");
    let bits2 = find_uint(&parsed, 55680, "bits of layer 2");
    let cap2 = find_uint(&parsed, 4000, "capacity of layer 2");
    let cases: Vec<(&str, usize, u64)> = vec![
        ("layer count 0", layers, 0),
        ("layer count 2", layers, 2),
        ("layer count 4", layers, 4),
        ("layer count 2^32", layers, 1 << 32),
        ("layer count u64::MAX", layers, u64::MAX),
        ("layer 0 bits 0", bits0, 0),
        ("layer 0 bits 64", bits0, 64),
        ("layer 0 bits one word less", bits0, 11072 - 64),
        ("layer 0 bits one word more", bits0, 11072 + 64),
        ("layer 0 bits doubled", bits0, 11072 * 2),
        ("layer 2 bits 2^40", bits2, 1 << 40),
        ("layer 2 bits u64::MAX", bits2, u64::MAX),
        ("layer 2 capacity 0", cap2, 0),
        ("layer 2 capacity x1000", cap2, 4_000_000),
        ("layer 2 capacity u64::MAX", cap2, u64::MAX),
    ];
    let mut accepted = Vec::new();
    for (i, (what, idx, value)) in cases.iter().enumerate() {
        let mut p = parsed.clone();
        p.fields[*idx] = Field::Uint(*value);
        let key = format!("patched{}", i);
        let v = fx.conn.cmd(&[b"RESTORE".as_slice(), key.as_bytes(), b"0", &p.serialize()]);
        fx.server.assert_alive();
        if !v.is_err() {
            accepted.push(format!("{} -> {:?}", what, v));
            probe_filter(&mut fx.conn, &key);
            fx.server.assert_alive();
        } else {
            assert!(!fx.conn.exists_key(&key));
        }
    }
    assert!(accepted.is_empty(), "patched payloads accepted: {:#?}", accepted);
    fx.assert_intact();
}

#[test]
fn restore_payload_from_another_filter_shape_round_trips_on_fresh_server() {
    // DUMP on one server, RESTORE on another (same module): the payload is self-contained
    let s1 = Server::start();
    let mut c1 = s1.conn();
    let fx = build_fixture(&mut c1);
    let before = snapshot(&mut c1, &fx);
    let payloads: Vec<Vec<u8>> =
        fx.iter().map(|b| c1.cmd(&["DUMP", &b.key]).as_bytes().to_vec()).collect();
    let s2 = Server::start_in(Arc::new(TempDir::new("other")), ServerOpts::new());
    let mut c2 = s2.conn();
    for (b, p) in fx.iter().zip(&payloads) {
        c2.ok(&[b"RESTORE".as_slice(), b.key.as_bytes(), b"0", p]);
    }
    assert_same(&mut c2, &fx, &before, "restored on another server");
}

/// `DUMP` of `BF.RESERVE k 0.01 10` + `BF.MADD k apple banana cherry` made by RedisBloom 2.8.2 on
/// Redis 7.0.15 (type MBbloom--, encoding version 4).
const REDISBLOOM_DUMP_HEX: &str = "07813016e5a289bef8040203020102050202020a047b14ae47e17a743f020804e9862fb2350e2640024080020005108212000a22040a0202818220400a00220203000a001a1f1028eeb54d57";

fn from_hex(h: &str) -> Vec<u8> {
    (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn restore_of_a_redisbloom_payload_is_imported_faithfully() {
    let mut s = Server::start();
    let mut c = s.conn();
    let payload = from_hex(REDISBLOOM_DUMP_HEX);
    assert!(dump_crc_ok(&payload));
    c.ok(&[b"RESTORE".as_slice(), b"rb", b"0", &payload]);
    s.assert_alive();
    let present = c.cmd(&["BF.MEXISTS", "rb", "apple", "banana", "cherry"]);
    assert_eq!(
        present,
        Value::Array(Some(vec![Value::Int(1), Value::Int(1), Value::Int(1)])),
        "imported filter lost items"
    );
    assert_eq!(c.bf_card("rb"), 3);
    // RedisBloom 2.8's BF.DEBUG of that filter.
    assert_eq!(
        c.bf_debug("rb"),
        ["size:3", "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:3 ratio:0.005"]
    );
    // patched RedisBloom-format payloads must not crash the loader either
    let parsed = ModulePayload::parse(&payload).expect("parse RedisBloom payload");
    for i in 0..parsed.fields.len() {
        if let Field::Uint(_) = parsed.fields[i] {
            for x in [0u64, u32::MAX as u64, u64::MAX] {
                let mut p = parsed.clone();
                p.fields[i] = Field::Uint(x);
                c.cmd(&[
                    b"RESTORE".as_slice(),
                    format!("rb{}-{}", i, x).as_bytes(),
                    b"0",
                    &p.serialize(),
                ]);
                s.assert_alive();
            }
        }
    }
}
