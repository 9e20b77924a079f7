//! The units people type on the command line: durations and percentages.

use std::time::Duration;

/// `n` and its noun, singular for one (`1 case`, `2 cases`, `0 cases`); the plural adds an s.
pub fn counted(n: impl Into<u64>, noun: &str) -> String {
    match n.into() {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

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

/// `10m`, `90s`, `1m30s`, `1.5m`, `1h 30m`, `500ms`, `2d`, `1w` (jiff's friendly format, or ISO 8601's
/// `PT90S`), or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let hint = "use e.g. 10m, 90s, 1m30s, 1.5h, 2d, 1w";
    let parsed = match text.trim().parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => parse_signed(text.trim())
            .map_err(|err| format!("invalid duration {text:?}: {err}; {hint}"))
            .and_then(|signed| {
                Duration::try_from(signed)
                    .map_err(|_| format!("invalid duration {text:?}: negative; {hint}"))
            }),
    }?;
    if parsed.is_zero() || parsed > MAX_BUDGET {
        return Err(format!(
            "invalid duration {text:?}: must be more than zero and at most a week; {hint}"
        ));
    }
    Ok(parsed)
}

/// A duration in jiff's friendly or ISO 8601 format; days and weeks (which a duration of clock time
/// refuses, a calendar's day not always being 24 hours) as 24 hours and 7 of them.
fn parse_signed(text: &str) -> Result<jiff::SignedDuration, jiff::Error> {
    text.parse::<jiff::SignedDuration>().or_else(|err| {
        text.parse::<jiff::Span>()
            .and_then(|span| span.to_duration(jiff::SpanRelativeTo::days_are_24_hours()))
            .map_err(|_| err)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_one_is_singular() {
        assert_eq!(counted(1u32, "paired round"), "1 paired round");
        assert_eq!(counted(0u32, "case"), "0 cases");
        assert_eq!(counted(2usize as u64, "config"), "2 configs");
    }

    #[test]
    fn durations() {
        for (text, seconds) in [
            ("10m", 600.0),
            ("90s", 90.0),
            ("1m30s", 90.0),
            ("1m 30s", 90.0),
            ("1.5m", 90.0),
            ("1h30m", 5400.0),
            ("1.5h", 5400.0),
            ("PT90S", 90.0),
            ("90", 90.0),
            ("500ms", 0.5),
            ("2d", 2.0 * 86400.0),
            ("7d", 7.0 * 86400.0),
            ("1w", 7.0 * 86400.0),
            ("1d12h", 1.5 * 86400.0),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs_f64(seconds)),
                "{text}"
            );
        }
        for bad in [
            "",
            "m",
            "10x",
            "0s",
            "-1m",
            "0",
            "8d",
            "2w",
            "99999999999999999999h",
            "18446744073709551615h",
        ] {
            let err = parse_duration(bad).unwrap_err();
            assert!(
                err.starts_with(&format!("invalid duration {bad:?}: ")),
                "{err}"
            );
            assert!(
                err.ends_with("use e.g. 10m, 90s, 1m30s, 1.5h, 2d, 1w"),
                "{err}"
            );
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
