//! The units people type on the command line: durations and percentages.

use std::time::Duration;

/// A percentage threshold: a finite number from 0 to 100 (NaN would switch a rule off silently).
pub fn parse_pct(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && (0.0..=100.0).contains(&value) => Ok(value),
        _ => Err(format!(
            "invalid percentage {text:?}: use a number from 0 to 100, e.g. 2 or 2.5"
        )),
    }
}

/// The longest budget accepted: a week, far beyond any iteration, and safe to add to `Instant::now()`.
const MAX_BUDGET: Duration = Duration::from_secs(7 * 24 * 3600);

/// `10m`, `90s`, `1h30m`, `500ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: use e.g. 10m, 90s, 1h30m");
    if let Ok(seconds) = text.parse::<u64>() {
        return (seconds > 0 && seconds <= MAX_BUDGET.as_secs())
            .then(|| Duration::from_secs(seconds))
            .ok_or_else(bad);
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let value: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let part = match unit {
            "ms" => Some(Duration::from_millis(value)),
            "s" => Some(Duration::from_secs(value)),
            "m" => value.checked_mul(60).map(Duration::from_secs),
            "h" => value.checked_mul(3600).map(Duration::from_secs),
            _ => return Err(bad()),
        };
        total = part
            .and_then(|part| total.checked_add(part))
            .filter(|total| *total <= MAX_BUDGET)
            .ok_or_else(bad)?;
        rest = &rest[digits + unit_len..];
    }
    if total.is_zero() {
        Err(bad())
    } else {
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        for bad in [
            "",
            "m",
            "10x",
            "0s",
            "-1m",
            "0",
            "99999999999999999999h",
            "18446744073709551615h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentages_are_finite_and_in_range() {
        assert_eq!(parse_pct("2.5"), Ok(2.5));
        assert_eq!(parse_pct("0"), Ok(0.0));
        for bad in ["NaN", "nan", "inf", "-1", "101", "", "x"] {
            assert!(parse_pct(bad).is_err(), "{bad}");
        }
    }
}
