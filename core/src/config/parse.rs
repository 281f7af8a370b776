//! Parsing the values of settings and parameters: booleans, sizes with suffixes (both from the
//! plugin API crate), and the edit distance behind "did you mean".

// How PARAM_BOOL and PARAM_SIZE values read is part of the plugin ABI's contract, so the
// components that read their own parameters use the very same functions.
pub use rshmem_plugin_api::values::{parse_bool, parse_size};

/// Edit distance between two names (case-insensitive), for "did you mean".
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) =
        (a.to_ascii_uppercase().chars().collect(), b.to_ascii_uppercase().chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("1T"), Some(1 << 40));
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size("M"), None);
    }

    #[test]
    fn decimal_sizes_round_up() {
        assert_eq!(parse_size("1.5G"), Some(3 << 29));
        assert_eq!(parse_size(".5m"), Some(1 << 19));
        // 3.1 MiB is 3250585.6 bytes: the ceiling.
        assert_eq!(parse_size("3.1M"), Some(3_250_586));
        assert_eq!(parse_size("2."), Some(2));
        assert_eq!(parse_size("0.1"), Some(1));
        assert_eq!(parse_size("1.25k"), Some(1280));
        for bad in [".", "1.2.3", "1.5Q", "-1", "1e3", "", "0x10"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn bools_parse() {
        assert_eq!(parse_bool("1"), Some(true));
        assert_eq!(parse_bool("off"), Some(false));
        assert_eq!(parse_bool("maybe"), None);
    }

    #[test]
    fn distances() {
        assert_eq!(distance("abc", "abd"), 1);
        assert_eq!(distance("", "ab"), 2);
    }
}
