//! How the values of settings and component parameters read (not part of the C ABI): the core
//! checks `PARAM_BOOL` and `PARAM_SIZE` values with these functions, and a Rust component that
//! reads its own parameters uses them too, so both always agree on what a value means.

/// A boolean as the core spells them: 1/0, y/n, yes/no, true/false, on/off (any case); empty is
/// false.
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
