//! DUMP payloads: Redis' CRC-64 trailer, and the module value's opcode stream parsed into
//! fields ([`ModulePayload`]) so single fields can be patched and the payload re-serialised.

// ---------------------------------------------------------------------------------------------
// CRC-64 trailer
// ---------------------------------------------------------------------------------------------

/// Redis' CRC-64 (Jones polynomial, reflected, init 0, no final xor), as used by DUMP payloads.
pub fn crc64(data: &[u8]) -> u64 {
    const POLY_REFLECTED: u64 = 0x95AC_9329_AC4B_C9B5; // bit-reversed 0xad93d23594c935a9
    let mut crc: u64 = 0;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            if crc & 1 == 1 {
                crc = (crc >> 1) ^ POLY_REFLECTED;
            } else {
                crc >>= 1;
            }
        }
    }
    crc
}

/// Replaces the CRC trailer of a DUMP payload so that it matches the (modified) body.
pub fn fix_dump_crc(payload: &mut [u8]) {
    assert!(payload.len() >= 10, "payload too short for a DUMP trailer");
    let n = payload.len() - 8;
    let crc = crc64(&payload[..n]);
    payload[n..].copy_from_slice(&crc.to_le_bytes());
}

/// Whether a payload's CRC trailer matches its body.
pub fn dump_crc_ok(payload: &[u8]) -> bool {
    let n = payload.len() - 8;
    crc64(&payload[..n]).to_le_bytes() == payload[n..]
}
// ---------------------------------------------------------------------------------------------
// DUMP payload of a module value: parse the module's opcode stream so single fields can be patched
// ---------------------------------------------------------------------------------------------

/// One value saved by the module through the RedisModule_Save* API.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    Uint(u64),
    Sint(i64),
    Float(f32),
    Double(f64),
    /// A string; `lzf` when stored LZF-compressed (then the bytes are the compressed form).
    Str {
        bytes: Vec<u8>,
        lzf: Option<u64>,
    },
    /// A string stored with an integer encoding.
    IntStr(i64, u8),
}

/// A parsed DUMP payload of a module value.
#[derive(Debug, Clone)]
pub struct ModulePayload {
    pub type_byte: u8,
    pub module_id: Vec<u8>,
    pub fields: Vec<Field>,
    /// The 2-byte RDB version of the trailer.
    pub version: [u8; 2],
}

fn read_len(buf: &[u8], pos: &mut usize) -> Result<(u64, Option<u8>), String> {
    let b = *buf.get(*pos).ok_or("eof in length")?;
    *pos += 1;
    match b >> 6 {
        0 => Ok(((b & 0x3f) as u64, None)),
        1 => {
            let b2 = *buf.get(*pos).ok_or("eof in 14-bit length")?;
            *pos += 1;
            Ok(((((b & 0x3f) as u64) << 8) | b2 as u64, None))
        }
        2 => {
            let n = if b == 0x80 {
                4
            } else if b == 0x81 {
                8
            } else {
                return Err(format!("bad length byte {:#x}", b));
            };
            let s = buf.get(*pos..*pos + n).ok_or("eof in long length")?;
            *pos += n;
            Ok((s.iter().fold(0u64, |a, &x| (a << 8) | x as u64), None))
        }
        _ => Ok((0, Some(b & 0x3f))),
    }
}

/// rdbSaveLen.
pub fn write_len(out: &mut Vec<u8>, v: u64) {
    if v < (1 << 6) {
        out.push(v as u8);
    } else if v < (1 << 14) {
        out.push(((v >> 8) as u8) | 0x40);
        out.push(v as u8);
    } else if v <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(v as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&v.to_be_bytes());
    }
}

impl ModulePayload {
    pub fn parse(payload: &[u8]) -> Result<ModulePayload, String> {
        if payload.len() < 11 {
            return Err("payload too short".into());
        }
        let body = &payload[..payload.len() - 10];
        let version = [payload[payload.len() - 10], payload[payload.len() - 9]];
        let mut pos = 0;
        let type_byte = body[0];
        if type_byte != 7 {
            return Err(format!("not a RDB_TYPE_MODULE_2 value (type {})", type_byte));
        }
        pos += 1;
        let id_start = pos;
        read_len(body, &mut pos)?;
        let module_id = body[id_start..pos].to_vec();
        let mut fields = Vec::new();
        loop {
            let (op, enc) = read_len(body, &mut pos)?;
            if enc.is_some() {
                return Err("encoded opcode".into());
            }
            match op {
                0 => break,
                1 | 2 => {
                    let (v, e) = read_len(body, &mut pos)?;
                    if e.is_some() {
                        return Err("encoded integer".into());
                    }
                    fields.push(if op == 1 { Field::Sint(v as i64) } else { Field::Uint(v) });
                }
                3 => {
                    let s = body.get(pos..pos + 4).ok_or("eof in float")?;
                    pos += 4;
                    fields.push(Field::Float(f32::from_le_bytes(s.try_into().unwrap())));
                }
                4 => {
                    let s = body.get(pos..pos + 8).ok_or("eof in double")?;
                    pos += 8;
                    fields.push(Field::Double(f64::from_le_bytes(s.try_into().unwrap())));
                }
                5 => {
                    let (len, enc) = read_len(body, &mut pos)?;
                    match enc {
                        None => {
                            let s = body.get(pos..pos + len as usize).ok_or("eof in string")?;
                            pos += len as usize;
                            fields.push(Field::Str { bytes: s.to_vec(), lzf: None });
                        }
                        Some(e @ 0..=2) => {
                            let n = 1usize << e;
                            let s = body.get(pos..pos + n).ok_or("eof in int string")?;
                            pos += n;
                            let mut v: i64 = 0;
                            for (i, &x) in s.iter().enumerate() {
                                v |= (x as i64) << (8 * i);
                            }
                            let shift = 64 - 8 * n as u32;
                            fields.push(Field::IntStr((v << shift) >> shift, e));
                        }
                        Some(3) => {
                            let (clen, _) = read_len(body, &mut pos)?;
                            let (ulen, _) = read_len(body, &mut pos)?;
                            let s =
                                body.get(pos..pos + clen as usize).ok_or("eof in lzf string")?;
                            pos += clen as usize;
                            fields.push(Field::Str { bytes: s.to_vec(), lzf: Some(ulen) });
                        }
                        Some(e) => return Err(format!("bad string encoding {}", e)),
                    }
                }
                other => return Err(format!("unknown module opcode {}", other)),
            }
        }
        if pos != body.len() {
            return Err(format!("{} trailing bytes after EOF opcode", body.len() - pos));
        }
        Ok(ModulePayload { type_byte, module_id, fields, version })
    }

    /// Serialises back into a DUMP payload with a correct CRC.
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = vec![self.type_byte];
        out.extend_from_slice(&self.module_id);
        for f in &self.fields {
            match f {
                Field::Sint(v) => {
                    write_len(&mut out, 1);
                    write_len(&mut out, *v as u64);
                }
                Field::Uint(v) => {
                    write_len(&mut out, 2);
                    write_len(&mut out, *v);
                }
                Field::Float(v) => {
                    write_len(&mut out, 3);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                Field::Double(v) => {
                    write_len(&mut out, 4);
                    out.extend_from_slice(&v.to_le_bytes());
                }
                Field::Str { bytes, lzf: None } => {
                    write_len(&mut out, 5);
                    write_len(&mut out, bytes.len() as u64);
                    out.extend_from_slice(bytes);
                }
                Field::Str { bytes, lzf: Some(ulen) } => {
                    write_len(&mut out, 5);
                    out.push(0xC3);
                    write_len(&mut out, bytes.len() as u64);
                    write_len(&mut out, *ulen);
                    out.extend_from_slice(bytes);
                }
                Field::IntStr(v, e) => {
                    write_len(&mut out, 5);
                    out.push(0xC0 | e);
                    let n = 1usize << e;
                    out.extend_from_slice(&v.to_le_bytes()[..n]);
                }
            }
        }
        write_len(&mut out, 0);
        out.extend_from_slice(&self.version);
        out.extend_from_slice(&[0u8; 8]);
        fix_dump_crc(&mut out);
        out
    }
}
