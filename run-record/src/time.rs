//! Absolute times as RFC 3339 strings in UTC (`2026-11-30T07:04:23.123456Z`).
//!
//! JSON numbers are doubles, so absolute times are never written as
//! integers of nanoseconds; this module formats and checks the strings
//! without pulling in a calendar crate. [`now_rfc3339`] is the one place
//! the record's crate reads the clock (the one system call it makes):
//! bench-core, the archive and the CLI all stamp their times through it,
//! so that every time netbisect writes has the same form.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Formats `time` as RFC 3339 UTC with microseconds.
pub fn rfc3339_utc(time: SystemTime) -> String {
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let seconds = since_epoch.as_secs();
    let days = i64::try_from(seconds / 86_400).unwrap_or(i64::MAX);
    let second_of_day = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60,
        since_epoch.subsec_micros()
    )
}

/// The current time, formatted by [`rfc3339_utc`].
pub fn now_rfc3339() -> String {
    rfc3339_utc(SystemTime::now())
}

/// Days since 1970-01-01 to a proleptic Gregorian date, after Howard
/// Hinnant's `civil_from_days` (chrono-compatible date algorithms).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date: the inverse of
/// [`civil_from_days`], after Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_index = i64::from(if month > 2 { month - 3 } else { month + 9 });
    let day_of_year = (153 * month_index + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// Seconds from 1970-01-01T00:00:00Z to `text`, a UTC time as records
/// keep them (see [`is_rfc3339_utc`]), with its fraction; `None` for
/// text of any other shape. Differences of two such times are spans of
/// wall-clock (a leap second aside).
pub fn utc_seconds(text: &str) -> Option<f64> {
    if !is_rfc3339_utc(text) {
        return None;
    }
    let field = |range: std::ops::Range<usize>| text[range].parse::<u32>().ok();
    let year = i64::from(field(0..4)?);
    let days = days_from_civil(year, field(5..7)?, field(8..10)?);
    let second_of_day = field(11..13)? * 3600 + field(14..16)? * 60 + field(17..19)?;
    let fraction: f64 = format!("0{}", &text[19..text.len() - 1]).parse().ok()?;
    Some(days as f64 * 86_400.0 + f64::from(second_of_day) + fraction)
}

/// A record's time (`YYYY-MM-DDTHH:MM:SS[.frac]Z`) with exactly six
/// fraction digits, as netbisect writes it: padded with zeros, or cut to
/// microseconds. Strings of this form order as the times they are
/// (`...23.5Z` after `...23Z`), which strings of other fraction lengths
/// do not; an archive orders its runs by them. Text of any other shape
/// is returned as it is.
pub fn sortable_utc(text: &str) -> String {
    if !is_rfc3339_utc(text) {
        return text.to_string();
    }
    let fraction = text[19..text.len() - 1].trim_start_matches('.');
    let mut digits: String = fraction.chars().take(6).collect();
    while digits.len() < 6 {
        digits.push('0');
    }
    format!("{}.{digits}Z", &text[..19])
}

/// `time` (a record's, see [`sortable_utc`]) as people read dates in
/// text, in git's short ISO form: `2026-12-01 14:24:33 +0000`. Text of
/// any other shape is returned as it is.
pub fn for_people(time: &str) -> String {
    if !is_rfc3339_utc(time) {
        return time.to_string();
    }
    format!("{} {} +0000", &time[..10], &time[11..19])
}

/// True when `text` has the shape of an RFC 3339 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)`).
pub fn is_rfc3339(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|part| part.iter().all(u8::is_ascii_digit))
    };
    if bytes.len() < 20
        || !digits(0..4)
        || bytes[4] != b'-'
        || !digits(5..7)
        || bytes[7] != b'-'
        || !digits(8..10)
        || !matches!(bytes[10], b'T' | b't')
        || !digits(11..13)
        || bytes[13] != b':'
        || !digits(14..16)
        || bytes[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let n_digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if n_digits == 0 {
            return false;
        }
        rest = &fraction[n_digits..];
    }
    match rest.as_bytes() {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => [h1, h2, m1, m2].iter().all(|b| b.is_ascii_digit()),
        _ => false,
    }
}

/// True when `text` is an RFC 3339 date-time in UTC with valid fields,
/// the form run records keep their times in
/// (`YYYY-MM-DDTHH:MM:SS[.frac]Z`, upper-case `T` and `Z`): a real month
/// and day of that month (leap years counted), hour 00-23, minute 00-59,
/// second 00-60 (a leap second). Other offsets are refused, since runs are
/// ordered by these strings.
pub fn is_rfc3339_utc(text: &str) -> bool {
    let bytes = text.as_bytes();
    if !is_rfc3339(text) || bytes[10] != b'T' || !text.ends_with('Z') {
        return false;
    }
    let number = |range: std::ops::Range<usize>| {
        text.get(range)
            .and_then(|part| part.parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    };
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
        && number(11..13) <= 23
        && number(14..16) <= 59
        && number(17..19) <= 60
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_the_seconds_it_formats() {
        for seconds in [0u64, 951_782_400, 1_700_000_000, 4_102_444_800] {
            let time = UNIX_EPOCH + Duration::from_micros(seconds * 1_000_000 + 250_000);
            let text = rfc3339_utc(time);
            assert_eq!(utc_seconds(&text), Some(seconds as f64 + 0.25), "{text}");
        }
        assert_eq!(utc_seconds("2026-12-06T14:37:38Z"), Some(1_796_567_858.0));
        assert_eq!(utc_seconds("2026-12-06T14:37:38+01:00"), None);
        assert_eq!(utc_seconds("yesterday"), None);
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
        let leap_day = UNIX_EPOCH + Duration::from_micros(1_709_210_096_123_456);
        assert_eq!(rfc3339_utc(leap_day), "2024-02-29T12:34:56.123456Z");
    }

    #[test]
    fn times_of_any_fraction_sort_as_times() {
        let times = [
            "2026-11-30T07:04:23Z",
            "2026-11-30T07:04:23.000001Z",
            "2026-11-30T07:04:23.1Z",
            "2026-11-30T07:04:23.5Z",
            "2026-11-30T07:04:23.512345678Z",
            "2026-11-30T07:04:24Z",
        ];
        // As strings, `23.5Z` sorts before `23Z` ('.' < 'Z').
        assert!(times[3] < times[0]);
        let sortable: Vec<String> = times.iter().map(|time| sortable_utc(time)).collect();
        assert!(
            sortable.windows(2).all(|pair| pair[0] < pair[1]),
            "{sortable:?}"
        );
        assert_eq!(sortable[0], "2026-11-30T07:04:23.000000Z");
        assert_eq!(sortable[4], "2026-11-30T07:04:23.512345Z");
        assert_eq!(
            sortable_utc("2026-11-30T07:04:23.123456Z"),
            "2026-11-30T07:04:23.123456Z"
        );
        assert_eq!(sortable_utc("yesterday"), "yesterday");
        assert_eq!(
            for_people("2026-12-01T14:24:33.5Z"),
            "2026-12-01 14:24:33 +0000"
        );
    }

    #[test]
    fn checks_the_shape() {
        assert!(is_rfc3339("2026-11-30T07:04:23Z"));
        assert!(is_rfc3339("2026-11-30T07:04:23.5+01:00"));
        assert!(!is_rfc3339("2026-11-30 07:04:23"));
        assert!(!is_rfc3339("1764486263"));
    }

    #[test]
    fn record_times_are_utc_with_valid_fields() {
        for good in [
            "2026-11-30T07:04:23Z",
            "2026-11-30T07:04:23.123456Z",
            "2024-02-29T23:59:60Z",
            "2000-02-29T00:00:00Z",
            &rfc3339_utc(SystemTime::now()),
        ] {
            assert!(is_rfc3339_utc(good), "{good}");
        }
        for bad in [
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-11-00T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T07:60:00Z",
            "2026-11-30T07:04:61Z",
            "2026-11-30T07:04:23+01:00",
            "2026-11-30T07:04:23-00:00",
            "2026-11-30T07:04:23z",
            "2026-11-30t07:04:23Z",
            "2026-11-30T07:04:23",
            "",
        ] {
            assert!(!is_rfc3339_utc(bad), "{bad}");
        }
    }
}
