//! `oshrun --tag-output`: every line a PE writes goes to oshrun's own stream of the same kind
//! behind `[1,RANK]<stdout>:` or `[1,RANK]<stderr>:`, the form Open MPI's `mpirun --tag-output`
//! uses, so that scripts which sort or filter a job's output by it work with either launcher.
//!
//! A PE's stdout is a pseudo-terminal ([`stdout_pty`]), as under `mpirun`: through a pipe, C's
//! stdio would buffer it fully and a PE's lines would appear only when it exits. Its stderr,
//! unbuffered anyway, is a pipe.
//!
//! Lines are written whole, one PE's at a time, so PEs never cut into each other's lines. A
//! last line without a newline gets one; a line longer than [`LINE_MAX`] goes out in pieces,
//! each tagged, rather than growing a buffer without bound.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest piece of a line held back waiting for its newline.
pub const LINE_MAX: usize = 64 * 1024;

/// A pseudo-terminal for a PE's stdout: (the side oshrun reads, the side the PE writes), the
/// latter with output processing off so that lines keep their bytes (no `\n` to `\r\n`).
/// `None` where none can be had (no `/dev/pts` in a container): the caller uses a pipe.
pub fn stdout_pty() -> Option<(File, OwnedFd)> {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: two valid out-pointers; no name buffer, default settings and window size.
    let r = unsafe {
        libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null())
    };
    if r != 0 {
        return None;
    }
    // SAFETY: openpty succeeded, so both are open descriptors that nothing else owns.
    let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    use std::os::fd::AsRawFd;
    // openpty's descriptors are inherited by default: every PE started later would hold this
    // one's. (The PE gets its side as its stdout all the same: the copy onto descriptor 1
    // is not close-on-exec.)
    for fd in [master.as_raw_fd(), slave.as_raw_fd()] {
        // SAFETY: an open descriptor of ours; F_SETFD takes an int flag.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return None;
        }
    }
    // SAFETY: a zeroed termios is a valid buffer for tcgetattr to fill; `slave` is open.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(slave.as_raw_fd(), &mut t) != 0 {
            return None;
        }
        t.c_oflag &= !libc::OPOST;
        t.c_lflag &= !(libc::ECHO | libc::ICANON | libc::ISIG);
        if libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t) != 0 {
            return None;
        }
    }
    Some((master, slave))
}

/// Copies `src` to `dst` line by line, each behind `tag`. Returns when `src` ends (or fails:
/// a pseudo-terminal answers EIO once the PE's side is closed) or `dst` fails (a closed pipe
/// downstream: the rest is read and dropped, so the PE never blocks on a full pipe).
pub fn tag_lines(src: impl Read, tag: &[u8], mut dst: impl FnMut(&[u8]) -> std::io::Result<()>) {
    let mut src = BufReader::with_capacity(LINE_MAX, src);
    let mut line = Vec::with_capacity(256);
    let mut ok = true;
    loop {
        line.clear();
        line.extend_from_slice(tag);
        // What was read before an error is in `line` too.
        let r = (&mut src).take(LINE_MAX as u64).read_until(b'\n', &mut line);
        let got = line.len() - tag.len();
        if got == 0 {
            return;
        }
        if line.last() != Some(&b'\n') && got < LINE_MAX {
            // The end of the stream, in the middle of a line.
            line.push(b'\n');
        }
        if ok {
            ok = dst(&line).is_ok();
        }
        if r.is_err() {
            return;
        }
    }
}

/// The threads that forward the PEs' tagged output.
#[derive(Default)]
pub struct Tagger {
    threads: Vec<JoinHandle<()>>,
}

impl Tagger {
    /// Forwards PE `rank`'s two streams from here on.
    pub fn forward(
        &mut self,
        rank: usize,
        out: Option<Box<dyn Read + Send>>,
        err: Option<Box<dyn Read + Send>>,
    ) {
        if let Some(out) = out {
            let tag = format!("[1,{rank}]<stdout>:").into_bytes();
            self.spawn(move || {
                tag_lines(out, &tag, |l| {
                    let mut o = std::io::stdout().lock();
                    o.write_all(l)?;
                    o.flush()
                })
            });
        }
        if let Some(err) = err {
            let tag = format!("[1,{rank}]<stderr>:").into_bytes();
            self.spawn(move || tag_lines(err, &tag, |l| std::io::stderr().lock().write_all(l)));
        }
    }

    fn spawn(&mut self, f: impl FnOnce() + Send + 'static) {
        match std::thread::Builder::new().name("oshrun-output".into()).spawn(f) {
            Ok(t) => self.threads.push(t),
            // The pipe then has no reader; a PE that fills it would block, so say why.
            Err(e) => eprintln!("oshrun: --tag-output: cannot start a thread to forward output: {e}"),
        }
    }

    /// Waits until every stream has ended, at most `bound` (a process the PEs started in the
    /// background may hold a pipe open for as long as it lives).
    pub fn finish(self, bound: Duration) {
        let deadline = Instant::now() + bound;
        while self.threads.iter().any(|t| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        for t in self.threads.into_iter().filter(|t| t.is_finished()) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tagged(input: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        tag_lines(input, b"[1,3]<stdout>:", |l| {
            out.push(l.to_vec());
            Ok(())
        });
        out
    }

    #[test]
    fn every_line_is_tagged_and_a_last_partial_line_is_ended() {
        let got = tagged(b"one\n\ntwo\nthree");
        let want: Vec<&[u8]> = vec![
            b"[1,3]<stdout>:one\n",
            b"[1,3]<stdout>:\n",
            b"[1,3]<stdout>:two\n",
            b"[1,3]<stdout>:three\n",
        ];
        assert_eq!(got, want);
        assert!(tagged(b"").is_empty());
    }

    #[test]
    fn a_line_longer_than_the_limit_goes_out_in_tagged_pieces_with_nothing_lost() {
        let mut input = vec![b'x'; LINE_MAX * 2 + 10];
        input.push(b'\n');
        let got = tagged(&input);
        assert_eq!(got.len(), 3);
        let tag = b"[1,3]<stdout>:";
        assert!(got.iter().all(|l| l.starts_with(tag)));
        let body: Vec<u8> = got.iter().flat_map(|l| l[tag.len()..].to_vec()).collect();
        assert_eq!(body, input);
    }

    #[test]
    fn a_failing_destination_stops_writing_but_the_source_is_read_to_its_end() {
        let input = b"a\nb\nc\n".to_vec();
        let mut calls = 0;
        let mut src = std::io::Cursor::new(input);
        tag_lines(&mut src, b"t:", |_| {
            calls += 1;
            Err(std::io::Error::other("closed"))
        });
        assert_eq!(calls, 1);
        assert_eq!(src.position(), 6);
    }

    #[test]
    fn a_pseudo_terminal_passes_lines_unchanged_and_ends_when_the_writer_closes() {
        let Some((master, slave)) = stdout_pty() else {
            eprintln!("no pseudo-terminal here: the pipe fallback is what runs");
            return;
        };
        let mut w = File::from(slave);
        w.write_all(b"one\ntwo\nno newline").unwrap();
        drop(w);
        let mut out = Vec::new();
        tag_lines(master, b"t:", |l| {
            out.extend_from_slice(l);
            Ok(())
        });
        assert_eq!(out, b"t:one\nt:two\nt:no newline\n");
    }
}
