//! A program run without a launcher is a job of one PE.

use super::Bootstrap;
use std::collections::HashMap;
use std::io;
use std::sync::Mutex;

pub struct Singleton {
    kv: Mutex<HashMap<String, Vec<u8>>>,
    job: String,
}

impl Singleton {
    pub fn new() -> Singleton {
        Singleton { kv: Mutex::new(HashMap::new()), job: format!("s{}", std::process::id()) }
    }
}

impl Default for Singleton {
    fn default() -> Self {
        Self::new()
    }
}

impl Bootstrap for Singleton {
    fn rank(&self) -> i32 {
        0
    }
    fn size(&self) -> i32 {
        1
    }
    fn local_rank(&self) -> i32 {
        0
    }
    fn local_size(&self) -> i32 {
        1
    }
    fn is_local(&self, pe: i32) -> bool {
        pe == 0
    }
    fn host_of(&self, pe: i32) -> Option<i32> {
        (pe == 0).then_some(0)
    }
    fn job_id(&self) -> &str {
        &self.job
    }
    fn put(&self, key: &str, value: &[u8]) -> io::Result<()> {
        self.kv.lock().unwrap().insert(key.to_string(), value.to_vec());
        Ok(())
    }
    fn fence(&self) -> io::Result<()> {
        Ok(())
    }
    fn get(&self, pe: i32, key: &str) -> io::Result<Option<Vec<u8>>> {
        Ok(if pe == 0 { self.kv.lock().unwrap().get(key).cloned() } else { None })
    }
    fn abort(&self, code: i32, _msg: &str) -> ! {
        std::process::exit(code)
    }
    fn finalize(&self) {}
}
