//! Parsing byte sizes (`512M`, `1G`, `4096`) and durations in seconds.

/// Plain bytes, or a number with a binary suffix: K, M, G, T (also KiB/KB, ...).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(split);
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(format!("{s:?}: unknown size suffix (use K, M, G or T)")),
    };
    if number.is_empty() {
        return Err(format!("{s:?}: expected a number of bytes"));
    }
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of bytes"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("{s:?}: too large"));
    }
    Ok(bytes.round() as u64)
}

/// A positive number of seconds (fractions allowed), as milliseconds.
pub fn parse_seconds_ms(s: &str) -> Result<u64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of seconds"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok(((secs * 1000.0).ceil() as u64).max(1))
}

/// A positive number of CPUs (fractions allowed), as millicpus.
pub fn parse_cpus_millis(s: &str) -> Result<u64, String> {
    let cpus: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: expected a number of CPUs"))?;
    if !(cpus.is_finite() && cpus > 0.0 && cpus <= 1_000_000.0) {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok(((cpus * 1000.0).round() as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_with_and_without_suffixes() {
        let cases = [
            ("4096", 4096),
            ("512M", 512 << 20),
            ("1G", 1 << 30),
            ("1g", 1 << 30),
            ("64KiB", 64 << 10),
            ("2MB", 2 << 20),
            ("1.5G", 3 << 29),
            ("10B", 10),
            ("1T", 1 << 40),
        ];
        for (input, want) in cases {
            assert_eq!(parse_bytes(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn bad_sizes_are_refused() {
        for input in ["", "M", "12X", "-1", "1e400", "abc"] {
            assert!(parse_bytes(input).is_err(), "{input} was accepted");
        }
    }

    #[test]
    fn seconds_and_cpus() {
        assert_eq!(parse_seconds_ms("2"), Ok(2000));
        assert_eq!(parse_seconds_ms("0.25"), Ok(250));
        assert!(parse_seconds_ms("0").is_err());
        assert!(parse_seconds_ms("-3").is_err());
        assert_eq!(parse_cpus_millis("1.5"), Ok(1500));
        assert_eq!(parse_cpus_millis("2"), Ok(2000));
        assert!(parse_cpus_millis("0").is_err());
        assert!(parse_cpus_millis("nan").is_err());
    }
}
