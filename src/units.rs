//! Parsing and formatting of the units users type and read: durations (`250ms`, `30s`,
//! `2m`), sizes (`4k`, `10MB`), bit rates (`8mbit`) and percentages (`3%`).
//!
//! Parsing returns a plain message on error; the caller names the flag.

use std::time::Duration;

/// Parses a duration: a number followed by `ns`, `us`/`µs`, `ms`, `s`, `m`, `h` or `d`
/// (`250ms`, `1.5s`, `2m`, `7d`). A bare `0` is accepted; other bare numbers are not, because
/// `--timeout 30` is ambiguous.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{text}' has no unit: write e.g. 250ms, 30s, 2m"))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a duration: write e.g. 250ms, 30s, 2m"))?;
    let secs_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        other => {
            return Err(format!(
                "'{text}': unknown unit '{other}' (use ns, us, ms, s, m, h or d)"
            ))
        }
    };
    let secs = value * secs_per_unit;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("'{text}' is too long a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a size in bytes: `512`, `4k`/`4KB`/`4KiB` (all 1024-based, as fio reads
/// them), `10MB`, `1G`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a size: write e.g. 4k, 10MB, 1G"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0f64.powi(4),
        other => {
            return Err(format!(
                "'{text}': unknown size unit '{other}' (use k, MB, G)"
            ))
        }
    };
    let bytes = value * mult;
    if !bytes.is_finite() || !(0.0..=1e18).contains(&bytes) {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a bit rate into bits per second: `8mbit`, `100kbit`, `1gbit`, `500000bit`
/// (the units of tc), or `1MB/s`-style byte rates.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("'{text}' has no unit: write e.g. 8mbit, 100kbit"))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("'{text}' is not a rate: write e.g. 8mbit, 100kbit"))?;
    let bits: f64 = match unit.trim() {
        "bit" | "bps" => 1.0,
        "kbit" | "kbps" => 1e3,
        "mbit" | "mbps" => 1e6,
        "gbit" | "gbps" => 1e9,
        "b/s" => 8.0,
        "kb/s" => 8e3,
        "mb/s" => 8e6,
        "gb/s" => 8e9,
        other => {
            return Err(format!(
                "'{text}': unknown rate unit '{other}' (use kbit, mbit, gbit)"
            ))
        }
    };
    let rate = value * bits;
    if !rate.is_finite() || rate < 1.0 {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(rate.round() as u64)
}

/// Parses a percentage `3%`, `3` or `0.5%` into a fraction of one hundred (3.0).
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("'{text}' is not a percentage: write e.g. 3%"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("'{text}' must be between 0% and 100%"));
    }
    Ok(v)
}

/// Formats milliseconds for people: `0.21 ms`, `20.4 ms`, `1.25 s`.
pub fn fmt_ms(ms: f64) -> String {
    if !ms.is_finite() {
        return "-".into();
    }
    if ms >= 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// Formats a byte count with binary units: `512 B`, `4.0 KiB`, `10.0 MiB`.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// A UTC time given in ms since the Unix epoch, to the second, as
/// `2026-11-23 06:40:12` (a time before the epoch reads as the epoch).
pub fn utc(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_string()
}

/// Milliseconds of a duration as f64.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("40us").unwrap(), Duration::from_micros(40));
        assert_eq!(
            parse_duration("7d").unwrap(),
            Duration::from_secs(7 * 86_400)
        );
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("3x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("ms").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("10MB").unwrap(), 10 * 1024 * 1024);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("512").unwrap(), 512);
        assert!(parse_size("4q").is_err());
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn rates_and_percents() {
        assert_eq!(parse_rate("8mbit").unwrap(), 8_000_000);
        assert_eq!(parse_rate("100kbit").unwrap(), 100_000);
        assert!(parse_rate("8").is_err());
        assert_eq!(parse_percent("3%").unwrap(), 3.0);
        assert!(parse_percent("101%").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(fmt_ms(0.214), "0.21 ms");
        assert_eq!(fmt_ms(20.44), "20.4 ms");
        assert_eq!(fmt_ms(1250.0), "1.25 s");
        assert_eq!(fmt_bytes(4096), "4.0 KiB");
        assert_eq!(fmt_bytes(12), "12 B");
    }
}
