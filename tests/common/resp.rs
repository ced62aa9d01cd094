//! The RESP2/RESP3 client: reply values ([`Value`]), a connection ([`Conn`]) that sends
//! commands (one by one or pipelined), assertions on single replies, a few server-introspection
//! helpers, and the reply reader. Commands are sent as arrays of bulk strings ([`encode`]), so
//! any bytes can be an argument.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// RESP values
// ---------------------------------------------------------------------------------------------

#[derive(Clone, PartialEq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
    Map(Vec<(Value, Value)>),
    Set(Vec<Value>),
    Bool(bool),
    Double(f64),
    Null,
    Verbatim(String, Vec<u8>),
    BigNumber(String),
    Push(Vec<Value>),
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Simple(s) => write!(f, "+{}", s),
            Value::Error(s) => write!(f, "-{}", s),
            Value::Int(i) => write!(f, ":{}", i),
            Value::Bulk(None) => write!(f, "$nil"),
            Value::Bulk(Some(b)) => {
                if b.len() > 200 {
                    write!(f, "${:?}...({} bytes)", String::from_utf8_lossy(&b[..200]), b.len())
                } else {
                    write!(f, "${:?}", String::from_utf8_lossy(b))
                }
            }
            Value::Array(None) => write!(f, "*nil"),
            Value::Array(Some(v)) => f.debug_list().entries(v).finish(),
            Value::Map(m) => f.debug_map().entries(m.iter().map(|(k, v)| (k, v))).finish(),
            Value::Set(v) => write!(f, "~{:?}", v),
            Value::Bool(b) => write!(f, "#{}", if *b { "t" } else { "f" }),
            Value::Double(d) => write!(f, ",{}", d),
            Value::Null => write!(f, "_"),
            Value::Verbatim(t, b) => write!(f, "={}:{:?}", t, String::from_utf8_lossy(b)),
            Value::BigNumber(s) => write!(f, "({}", s),
            Value::Push(v) => write!(f, ">{:?}", v),
        }
    }
}

impl Value {
    pub fn is_err(&self) -> bool {
        matches!(self, Value::Error(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null | Value::Bulk(None) | Value::Array(None))
    }

    pub fn is_ok(&self) -> bool {
        *self == Value::Simple("OK".into())
    }

    /// The text of an error reply; panics on anything else.
    pub fn err_text(&self) -> &str {
        match self {
            Value::Error(s) => s,
            other => panic!("expected an error reply, got {:?}", other),
        }
    }

    pub fn as_int(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            other => panic!("expected an integer reply, got {:?}", other),
        }
    }

    /// A 1/0 answer of the add/exists family: an integer in RESP2, a boolean in RESP3.
    pub fn as_bit(&self) -> i64 {
        match self {
            Value::Int(i @ (0 | 1)) => *i,
            Value::Bool(b) => *b as i64,
            other => panic!("expected 1/0 or a boolean, got {:?}", other),
        }
    }

    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Value::Bulk(Some(b)) => b,
            Value::Simple(s) => s.as_bytes(),
            Value::Verbatim(_, b) => b,
            other => panic!("expected a string reply, got {:?}", other),
        }
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("reply is not UTF-8")
    }

    pub fn as_array(&self) -> &[Value] {
        match self {
            Value::Array(Some(v)) | Value::Set(v) | Value::Push(v) => v,
            other => panic!("expected an array reply, got {:?}", other),
        }
    }

    pub fn as_map(&self) -> &[(Value, Value)] {
        match self {
            Value::Map(m) => m,
            other => panic!("expected a map reply, got {:?}", other),
        }
    }

    /// Key/value pairs of a RESP3 map, or of a RESP2 flat array of alternating names and values.
    pub fn pairs(&self) -> Vec<(Value, Value)> {
        match self {
            Value::Map(m) => m.clone(),
            Value::Array(Some(v)) => {
                assert!(v.len() % 2 == 0, "odd-length array cannot be read as pairs: {:?}", self);
                v.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
            }
            other => panic!("expected a map or a flat array, got {:?}", other),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    pub port: u16,
}

/// Safety net only (never a test threshold): a reply that never comes fails the test instead of
/// hanging it forever.
const IO_TIMEOUT: Duration = Duration::from_secs(120);

pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        let a = a.as_ref();
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn show_args<A: AsRef<[u8]>>(args: &[A]) -> String {
    let parts: Vec<String> = args
        .iter()
        .take(12)
        .map(|a| {
            let a = a.as_ref();
            if a.len() > 60 {
                format!("<{} bytes>", a.len())
            } else {
                String::from_utf8_lossy(a).into_owned()
            }
        })
        .collect();
    let more =
        if args.len() > 12 { format!(" ...(+{} args)", args.len() - 12) } else { String::new() };
    format!("{}{}", parts.join(" "), more)
}

impl Conn {
    pub fn try_connect(port: u16) -> std::io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(IO_TIMEOUT))?;
        s.set_write_timeout(Some(IO_TIMEOUT))?;
        let w = s.try_clone()?;
        Ok(Conn { reader: BufReader::new(s), writer: w, port })
    }

    pub fn connect(port: u16) -> Conn {
        Conn::try_connect(port).unwrap_or_else(|e| panic!("connect to 127.0.0.1:{}: {}", port, e))
    }

    /// Sends a command and reads its reply (pushes are skipped).
    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> std::io::Result<Value> {
        self.writer.write_all(&encode(args))?;
        self.read_reply()
    }

    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Value {
        match self.try_cmd(args) {
            Ok(v) => v,
            Err(e) => panic!("command `{}` failed at the connection level: {}", show_args(args), e),
        }
    }

    /// Sends all commands at once, then reads one reply per command.
    pub fn pipeline<A: AsRef<[u8]>>(&mut self, cmds: &[Vec<A>]) -> Vec<Value> {
        let mut buf = Vec::new();
        for c in cmds {
            buf.extend_from_slice(&encode(c));
        }
        self.writer.write_all(&buf).expect("write pipeline");
        (0..cmds.len())
            .map(|_| self.read_reply().unwrap_or_else(|e| panic!("pipeline read: {}", e)))
            .collect()
    }

    // ---- assertions on single commands ----

    pub fn ok<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let v = self.cmd(args);
        assert!(v.is_ok(), "`{}` expected +OK, got {:?}", show_args(args), v);
    }

    pub fn int<A: AsRef<[u8]>>(&mut self, args: &[A]) -> i64 {
        match self.cmd(args) {
            Value::Int(i) => i,
            v => panic!("`{}` expected an integer, got {:?}", show_args(args), v),
        }
    }

    /// Runs a command that must fail; returns the error text.
    pub fn err<A: AsRef<[u8]>>(&mut self, args: &[A]) -> String {
        match self.cmd(args) {
            Value::Error(e) => e,
            v => panic!("`{}` expected an error, got {:?}", show_args(args), v),
        }
    }

    /// Runs a command that must fail with exactly `expected`.
    pub fn expect_err<A: AsRef<[u8]>>(&mut self, args: &[A], expected: &str) {
        let v = self.cmd(args);
        assert_eq!(v, Value::Error(expected.to_string()), "`{}`", show_args(args));
    }

    // ---- server introspection ----

    /// A field of `INFO <section>`.
    pub fn info_field(&mut self, section: &str, field: &str) -> Option<String> {
        let v = self.cmd(&["INFO", section]);
        let text = String::from_utf8_lossy(v.as_bytes()).into_owned();
        let prefix = format!("{}:", field);
        text.lines().find_map(|l| l.strip_prefix(&prefix).map(|s| s.trim().to_string()))
    }

    pub fn used_memory(&mut self) -> i64 {
        self.info_field("memory", "used_memory")
            .expect("used_memory in INFO memory")
            .parse()
            .unwrap()
    }

    pub fn exists_key(&mut self, key: &str) -> bool {
        self.int(&["EXISTS", key]) == 1
    }

    pub fn digest(&mut self, key: &str) -> String {
        let v = self.cmd(&["DEBUG", "DIGEST-VALUE", key]);
        let arr = v.as_array();
        assert_eq!(arr.len(), 1, "DEBUG DIGEST-VALUE {} -> {:?}", key, v);
        arr[0].as_str().to_string()
    }

    /// CONFIG GET of one parameter (RESP2 pairs or RESP3 map).
    pub fn config_get(&mut self, name: &str) -> Option<String> {
        let v = self.cmd(&["CONFIG", "GET", name]);
        assert!(!v.is_err(), "CONFIG GET {} -> {:?}", name, v);
        v.pairs().into_iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v.as_str().to_string())
    }

    fn read_line(&mut self) -> std::io::Result<Vec<u8>> {
        let mut line = Vec::new();
        let n = self.reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        if line.len() < 2 || line[line.len() - 2] != b'\r' {
            return Err(bad(format!("line without CRLF: {:?}", String::from_utf8_lossy(&line))));
        }
        line.truncate(line.len() - 2);
        Ok(line)
    }

    fn read_exact_crlf(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        let mut buf = vec![0u8; n + 2];
        self.reader.read_exact(&mut buf)?;
        if &buf[n..] != b"\r\n" {
            return Err(bad("bulk payload not followed by CRLF".into()));
        }
        buf.truncate(n);
        Ok(buf)
    }

    /// Reads one reply, skipping out-of-band pushes.
    pub fn read_reply(&mut self) -> std::io::Result<Value> {
        loop {
            match self.read_value()? {
                Value::Push(_) => continue,
                v => return Ok(v),
            }
        }
    }

    fn read_value(&mut self) -> std::io::Result<Value> {
        let line = self.read_line()?;
        if line.is_empty() {
            return Err(bad("empty reply line".into()));
        }
        let body = String::from_utf8_lossy(&line[1..]).into_owned();
        let num = |s: &str| -> std::io::Result<i64> {
            s.parse::<i64>().map_err(|_| bad(format!("bad number {:?}", s)))
        };
        Ok(match line[0] {
            b'+' => Value::Simple(body),
            b'-' => Value::Error(body),
            b':' => Value::Int(num(&body)?),
            b'$' => {
                let n = num(&body)?;
                if n < 0 {
                    Value::Bulk(None)
                } else {
                    Value::Bulk(Some(self.read_exact_crlf(n as usize)?))
                }
            }
            b'*' => {
                let n = num(&body)?;
                if n < 0 {
                    Value::Array(None)
                } else {
                    let mut v = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        v.push(self.read_value()?);
                    }
                    Value::Array(Some(v))
                }
            }
            b'%' => {
                let n = num(&body)?;
                let mut m = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    let k = self.read_value()?;
                    let v = self.read_value()?;
                    m.push((k, v));
                }
                Value::Map(m)
            }
            b'~' => {
                let n = num(&body)?;
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.read_value()?);
                }
                Value::Set(v)
            }
            b'>' => {
                let n = num(&body)?;
                let mut v = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    v.push(self.read_value()?);
                }
                Value::Push(v)
            }
            b'|' => {
                // attribute: read and discard, then the real value follows
                let n = num(&body)?;
                for _ in 0..(2 * n) {
                    self.read_value()?;
                }
                return self.read_value();
            }
            b'#' => match body.as_str() {
                "t" => Value::Bool(true),
                "f" => Value::Bool(false),
                _ => return Err(bad(format!("bad boolean {:?}", body))),
            },
            b',' => {
                let d = match body.as_str() {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    "nan" | "-nan" => f64::NAN,
                    s => s.parse::<f64>().map_err(|_| bad(format!("bad double {:?}", s)))?,
                };
                Value::Double(d)
            }
            b'_' => Value::Null,
            b'(' => Value::BigNumber(body),
            b'!' => {
                let n = num(&body)?;
                let b = self.read_exact_crlf(n as usize)?;
                Value::Error(String::from_utf8_lossy(&b).into_owned())
            }
            b'=' => {
                let n = num(&body)?;
                let b = self.read_exact_crlf(n as usize)?;
                if b.len() < 4 || b[3] != b':' {
                    return Err(bad("verbatim string without a format prefix".into()));
                }
                Value::Verbatim(String::from_utf8_lossy(&b[..3]).into_owned(), b[4..].to_vec())
            }
            other => return Err(bad(format!("unknown reply type byte {:?}", other as char))),
        })
    }
}

fn bad(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, msg)
}
