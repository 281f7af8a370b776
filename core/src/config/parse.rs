//! Parsing the values of settings and parameters: booleans, sizes with suffixes, and the edit
//! distance behind "did you mean".

pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "y" | "yes" | "true" | "on" => Some(true),
        "0" | "n" | "no" | "false" | "off" | "" => Some(false),
        _ => None,
    }
}

/// A size as the spec writes it: a non-negative integer or decimal number with an optional
/// binary suffix (`4096`, `512M`, `1g`, `2KiB`, `1.5G`, `.5m`, `3.1M`). A decimal becomes the
/// integer ceiling of number × scale, as the spec requires ("at least as large as").
pub fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim();
    let end = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(end);
    let shift = match unit.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    if !num.contains('.') {
        return num.parse::<usize>().ok()?.checked_mul(1usize << shift);
    }
    // One point, digits on at least one side ("1.", ".5" and "1.5", not "." or "1.2.3").
    let (int, frac) = num.split_once('.')?;
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    // Exact arithmetic: the number is int + frac / 10^digits; scale it, then round up.
    let den = 10u128.checked_pow(frac.len() as u32)?;
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let scaled = int.checked_mul(den)?.checked_add(frac)?.checked_mul(1u128 << shift)?;
    usize::try_from(scaled.div_ceil(den)).ok()
}

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
