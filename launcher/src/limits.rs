//! The process limits a job must fit in, checked before any PE starts: a job that runs out of
//! open files or processes half-way through its start-up fails with a less helpful message,
//! after starting PEs that then have to be stopped.

/// Descriptors oshrun holds besides its PEs' (standard streams, the listening socket, the
/// leftover keeper, the pseudo-terminal master, libraries).
const OWN_FILES: u64 = 32;

/// Descriptors oshrun holds per PE: its bootstrap connection, and with `--tag-output` the
/// PE's stdout and stderr.
fn files_per_pe(tag_output: bool) -> u64 {
    if tag_output {
        3
    } else {
        1
    }
}

fn limit(resource: libc::__rlimit_resource_t) -> libc::rlimit {
    let mut l = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: getrlimit writes the struct it is given.
    unsafe { libc::getrlimit(resource, &mut l) };
    l
}

/// Raise oshrun's open-file limit to its hard limit (as a shell's `ulimit -n` may), then
/// check that `np` PEs fit in it and in the process limit. PEs inherit the raised limit.
pub fn check(np: usize, tag_output: bool) -> Result<(), String> {
    let np = np as u64;
    let mut files = limit(libc::RLIMIT_NOFILE);
    if files.rlim_cur < files.rlim_max {
        files.rlim_cur = files.rlim_max;
        // SAFETY: setrlimit reads the struct; raising the soft limit up to the hard one needs
        // no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &files) } != 0 {
            files = limit(libc::RLIMIT_NOFILE);
        }
    }
    let need = np.saturating_mul(files_per_pe(tag_output)).saturating_add(OWN_FILES);
    if files.rlim_cur != libc::RLIM_INFINITY && need > files.rlim_cur {
        return Err(format!(
            "-np {np} needs about {need} open files (one connection per PE{}), but the open-file limit is {} (hard limit {}): raise it (ulimit -n) or start fewer PEs",
            if tag_output { ", and its output streams under --tag-output" } else { "" },
            files.rlim_cur,
            files.rlim_max
        ));
    }
    // SAFETY: geteuid has no preconditions. Root is exempt from RLIMIT_NPROC.
    let root = unsafe { libc::geteuid() } == 0;
    let procs = limit(libc::RLIMIT_NPROC);
    if !root && procs.rlim_cur != libc::RLIM_INFINITY && np > procs.rlim_cur {
        return Err(format!(
            "-np {np} is more processes than this user may run (ulimit -u: {}): start fewer PEs",
            procs.rlim_cur
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_beyond_the_open_file_limit_is_refused_naming_it() {
        let hard = limit(libc::RLIMIT_NOFILE).rlim_max;
        if hard == libc::RLIM_INFINITY || hard > (usize::MAX as u64) / 4 {
            return;
        }
        let e = check(hard as usize, false).unwrap_err();
        assert!(e.contains("open-file limit") && e.contains("ulimit -n"), "{e}");
        assert!(check(2, true).is_ok());
        assert!(limit(libc::RLIMIT_NOFILE).rlim_cur == hard, "the soft limit was raised to the hard one");
    }
}
