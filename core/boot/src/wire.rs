//! The wire protocol between a PE and `oshrun`'s key-value server (one Unix stream socket per
//! PE). Frames are a little-endian `u32` length, then a tag byte and the fields. Kept tiny and
//! dependency-free because both the library and the launcher speak it.

use std::io::{self, Read, Write};

/// Environment variables `oshrun` sets for each PE.
pub const ENV_SOCKET: &str = "RSHMEM_BOOT_SOCKET";
pub const ENV_RANK: &str = "RSHMEM_RANK";
pub const ENV_SIZE: &str = "RSHMEM_SIZE";
pub const ENV_JOB: &str = "RSHMEM_JOB_ID";
/// The job's secret (hex): a PE presents it in `Hello`, and `oshrun` acts on nothing else.
pub const ENV_SECRET: &str = "RSHMEM_BOOT_SECRET";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// First message of a PE, with the job's secret; `oshrun` drops a connection whose first
    /// message is anything else or whose secret is wrong.
    Hello {
        rank: u32,
        pid: u32,
        secret: Vec<u8>,
    },
    /// Publish `value` under `key` for the sending PE.
    Put {
        key: String,
        value: Vec<u8>,
    },
    /// Collective: the reply `FenceDone` comes once every PE has sent `Fence`.
    Fence,
    FenceDone,
    /// Read `key` of PE `rank`; answered by `Value`.
    Get {
        rank: u32,
        key: String,
    },
    Value(Option<Vec<u8>>),
    /// Read `key` of every PE at once; answered by `Values` (one entry per rank, in rank
    /// order). One round trip instead of one per PE: start-up reads each of its keys for every
    /// peer, and per-PE round trips through the one `oshrun` made it quadratic (issue 51).
    GetAll {
        key: String,
    },
    Values(Vec<Option<Vec<u8>>>),
    /// End the job with `code` (shmem_global_exit or a fatal error).
    Abort {
        code: i32,
        msg: String,
    },
    /// The PE called shmem_finalize: exiting from now on is normal.
    Finalize,
    /// The PE initialized the library again after `Finalize` (OpenSHMEM 1.6 allows it): it
    /// counts as running once more, so leaving without another finalize is a failure again.
    Resume,
}

impl Msg {
    /// The message's kind, for logs (never its contents).
    pub fn name(&self) -> &'static str {
        match self {
            Msg::Hello { .. } => "Hello",
            Msg::Put { .. } => "Put",
            Msg::Fence => "Fence",
            Msg::FenceDone => "FenceDone",
            Msg::Get { .. } => "Get",
            Msg::Value(_) => "Value",
            Msg::GetAll { .. } => "GetAll",
            Msg::Values(_) => "Values",
            Msg::Abort { .. } => "Abort",
            Msg::Finalize => "Finalize",
            Msg::Resume => "Resume",
        }
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

pub fn encode(msg: &Msg) -> Vec<u8> {
    let mut body = Vec::new();
    match msg {
        Msg::Hello { rank, pid, secret } => {
            body.push(1);
            body.extend_from_slice(&rank.to_le_bytes());
            body.extend_from_slice(&pid.to_le_bytes());
            put_bytes(&mut body, secret);
        }
        Msg::Put { key, value } => {
            body.push(2);
            put_bytes(&mut body, key.as_bytes());
            put_bytes(&mut body, value);
        }
        Msg::Fence => body.push(3),
        Msg::FenceDone => body.push(4),
        Msg::Get { rank, key } => {
            body.push(5);
            body.extend_from_slice(&rank.to_le_bytes());
            put_bytes(&mut body, key.as_bytes());
        }
        Msg::Value(v) => {
            body.push(6);
            match v {
                Some(v) => {
                    body.push(1);
                    put_bytes(&mut body, v);
                }
                None => body.push(0),
            }
        }
        Msg::Abort { code, msg } => {
            body.push(7);
            body.extend_from_slice(&code.to_le_bytes());
            put_bytes(&mut body, msg.as_bytes());
        }
        Msg::Finalize => body.push(8),
        Msg::Resume => body.push(9),
        Msg::GetAll { key } => {
            body.push(10);
            put_bytes(&mut body, key.as_bytes());
        }
        Msg::Values(vs) => {
            body.push(11);
            body.extend_from_slice(&(vs.len() as u32).to_le_bytes());
            for v in vs {
                match v {
                    Some(v) => {
                        body.push(1);
                        put_bytes(&mut body, v);
                    }
                    None => body.push(0),
                }
            }
        }
    }
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&body);
    frame
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated bootstrap message"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn bytes(&mut self) -> io::Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.take(n)?.to_vec())
    }
    fn string(&mut self) -> io::Result<String> {
        String::from_utf8(self.bytes()?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

pub fn decode(body: &[u8]) -> io::Result<Msg> {
    let mut c = Cursor(body);
    let tag = c.take(1)?[0];
    Ok(match tag {
        1 => Msg::Hello { rank: c.u32()?, pid: c.u32()?, secret: c.bytes()? },
        2 => Msg::Put { key: c.string()?, value: c.bytes()? },
        3 => Msg::Fence,
        4 => Msg::FenceDone,
        5 => Msg::Get { rank: c.u32()?, key: c.string()? },
        6 => Msg::Value(if c.take(1)?[0] == 1 { Some(c.bytes()?) } else { None }),
        7 => Msg::Abort { code: c.u32()? as i32, msg: c.string()? },
        8 => Msg::Finalize,
        9 => Msg::Resume,
        10 => Msg::GetAll { key: c.string()? },
        11 => {
            let n = c.u32()? as usize;
            // Each entry takes at least its flag byte: a count beyond the frame is a lie.
            if n > c.0.len() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated bootstrap message"));
            }
            let mut vs = Vec::with_capacity(n);
            for _ in 0..n {
                vs.push(if c.take(1)?[0] == 1 { Some(c.bytes()?) } else { None });
            }
            Msg::Values(vs)
        }
        t => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unknown bootstrap message tag {t}"),
            ))
        }
    })
}

pub fn write_msg(w: &mut impl Write, msg: &Msg) -> io::Result<()> {
    w.write_all(&encode(msg))?;
    w.flush()
}

pub fn read_msg(r: &mut impl Read) -> io::Result<Msg> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > 64 << 20 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "bootstrap message too large"));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    decode(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_round_trips() {
        let msgs = [
            Msg::Hello { rank: 3, pid: 1234, secret: vec![7; 32] },
            Msg::Put { key: "k".into(), value: vec![0, 1, 255] },
            Msg::Fence,
            Msg::FenceDone,
            Msg::Get { rank: 7, key: "spml.ucx.addr".into() },
            Msg::Value(None),
            Msg::Value(Some(vec![9; 300])),
            Msg::Abort { code: -3, msg: "bye".into() },
            Msg::Finalize,
            Msg::Resume,
            Msg::GetAll { key: "seg.0".into() },
            Msg::Values(vec![]),
            Msg::Values(vec![Some(vec![1, 2]), None, Some(vec![])]),
        ];
        for m in msgs {
            let frame = encode(&m);
            assert_eq!(read_msg(&mut &frame[..]).unwrap(), m);
        }
    }

    #[test]
    fn truncated_and_unknown_frames_are_errors() {
        assert!(decode(&[2, 5, 0, 0, 0, b'a']).is_err());
        assert!(decode(&[99]).is_err());
        assert!(decode(&[11, 255, 255, 255, 255, 0]).is_err(), "a count beyond the frame");
        assert!(read_msg(&mut &[1u8, 0][..]).is_err());
    }
}
