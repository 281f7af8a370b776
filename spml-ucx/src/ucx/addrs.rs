//! Every PE's worker address, learnt when first needed (issue 51).
//!
//! Start-up used to read every PE's address through the bootstrap: one lookup per PE (under
//! PMIx each a request to the launcher's server) and about 200-300 bytes held per PE, while
//! endpoints to this host's PEs are made only on first use, which with mapped peers is never.
//! The book holds the addresses it was given (the PEs `connect` makes endpoints to at once)
//! and looks the others up through `fetch` the first time an endpoint to them is made.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Fetch = Box<dyn Fn(usize) -> Result<Vec<u8>, String> + Send + Sync>;

pub struct AddrBook {
    /// The addresses held, by PE: only those given or looked up (a table of every PE's was 16
    /// bytes per PE never reached, issue 51).
    known: Mutex<HashMap<usize, Arc<[u8]>>>,
    pes: usize,
    fetch: Fetch,
}

impl Default for AddrBook {
    fn default() -> Self {
        AddrBook::with(0, HashMap::new(), Box::new(|pe| Err(format!("PE {pe}: not connected"))))
    }
}

impl AddrBook {
    /// A book of `n` PEs that knows `given` (`(pe, address)`) and asks `fetch` for the rest.
    pub fn new(n: usize, given: Vec<(usize, Vec<u8>)>, fetch: Fetch) -> Arc<AddrBook> {
        let known = given.into_iter().filter(|(pe, _)| *pe < n).map(|(pe, a)| (pe, a.into())).collect();
        Arc::new(AddrBook::with(n, known, fetch))
    }

    /// Every PE's address known at once (tests, and one-process uses).
    pub fn complete(addrs: &[Vec<u8>]) -> Arc<AddrBook> {
        AddrBook::new(
            addrs.len(),
            addrs.iter().cloned().enumerate().collect(),
            Box::new(|pe| Err(format!("PE {pe}: no address"))),
        )
    }

    fn with(pes: usize, known: HashMap<usize, Arc<[u8]>>, fetch: Fetch) -> AddrBook {
        AddrBook { known: Mutex::new(known), pes, fetch }
    }

    /// How many PEs the book is for.
    pub fn pes(&self) -> usize {
        self.pes
    }

    /// PE `pe`'s address, looked up now if it is not known yet.
    pub fn get(&self, pe: usize) -> Result<Arc<[u8]>, String> {
        if pe >= self.pes {
            return Err(format!("PE {pe} is beyond the PEs of the job"));
        }
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(a) = known.get(&pe) {
            return Ok(a.clone());
        }
        // The lookup under the lock: a second caller for the same PE waits for this one.
        let a: Arc<[u8]> = (self.fetch)(pe)?.into();
        known.insert(pe, a.clone());
        Ok(a)
    }

    /// How many addresses are held.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn given_addresses_are_kept_and_the_others_fetched_once() {
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let book = AddrBook::new(
            4,
            vec![(2, vec![2, 2])],
            Box::new(move |pe| {
                counter.fetch_add(1, Ordering::Relaxed);
                if pe == 3 {
                    Err("PE 3 published nothing".into())
                } else {
                    Ok(vec![pe as u8; 3])
                }
            }),
        );
        assert_eq!(book.held(), 1);
        assert_eq!(&*book.get(2).unwrap(), &[2, 2]);
        assert_eq!(asked.load(Ordering::Relaxed), 0);
        assert_eq!(&*book.get(1).unwrap(), &[1, 1, 1]);
        assert_eq!(&*book.get(1).unwrap(), &[1, 1, 1]);
        assert_eq!(asked.load(Ordering::Relaxed), 1, "fetched once");
        assert!(book.get(3).unwrap_err().contains("published nothing"));
        assert!(book.get(4).is_err());
        assert_eq!((book.pes(), book.held()), (4, 2));
    }
}
