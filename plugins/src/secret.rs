//! Randomness for what must not be guessed: the per-job secret every PE presents to `oshrun`,
//! the tokens that let local peers fetch a segment (`share`), and unpredictable socket names.

use std::io;

/// `n` bytes from the kernel's random source.
pub fn random_bytes(n: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    let mut done = 0;
    while done < n {
        // SAFETY: the buffer is writable for the remaining length.
        let r = unsafe { libc::getrandom(buf[done..].as_mut_ptr().cast(), n - done, 0) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        done += r as usize;
    }
    Ok(buf)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// `n` random bytes as hex; falls back to the clock and pid only if the kernel refuses, which
/// makes names guessable but still unique.
pub fn random_hex(n: usize) -> String {
    match random_bytes(n) {
        Ok(b) => hex(&b),
        Err(_) => {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            format!("{:x}{:x}", std::process::id(), t.as_nanos())
        }
    }
}

/// Equality whose time does not depend on where the inputs differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_values_differ_and_round_trip_through_hex() {
        let a = random_bytes(32).unwrap();
        let b = random_bytes(32).unwrap();
        assert_ne!(a, b);
        assert_eq!(unhex(&hex(&a)).unwrap(), a);
        assert_eq!(random_hex(8).len(), 16);
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }

    #[test]
    fn comparison_needs_every_byte() {
        assert!(same(b"abcd", b"abcd"));
        assert!(!same(b"abcd", b"abce"));
        assert!(!same(b"abcd", b"abc"));
    }
}
