//! Value parsers of the arguments that have a range: clap refuses a value
//! out of it with these messages (exit 2; `verdict` exits 128) before any
//! command runs.

use std::time::Duration;

/// A number as clap reads it, with the message of its own parser.
fn number<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    text.parse().map_err(|err: T::Err| err.to_string())
}

/// `-D SECS` of `bench`: between 0.01 s and an hour.
pub fn interim_seconds(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds.is_finite() && (0.01..=3600.0).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(format!(
            "interim interval (-D) must be between 0.01 and 3600, got {seconds}"
        ))
    }
}

/// `--timeout SECS` of `serve`: between 0.01 s and an hour.
pub fn control_timeout(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds.is_finite() && (0.01..=3600.0).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(format!(
            "--timeout must be between 0.01 and 3600 seconds, got {seconds}"
        ))
    }
}

/// `serve --max-handshakes`: 1 to 65536 connections.
pub fn max_handshakes(text: &str) -> Result<usize, String> {
    match number(text)? {
        places @ 1..=65_536 => Ok(places),
        places => Err(format!(
            "--max-handshakes must be between 1 and 65536, got {places}"
        )),
    }
}

/// `-n N` of `ab`: at least one round.
pub fn rounds(text: &str) -> Result<u32, String> {
    match number(text)? {
        0 => Err("-n must be at least 1".to_string()),
        rounds => Ok(rounds),
    }
}

/// The intervals, leases and holds of `track` and `worker`: between a
/// hundredth of a second and a day.
pub fn lab_seconds(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds.is_finite() && (0.01..=86_400.0).contains(&seconds) {
        Ok(seconds)
    } else {
        Err(format!(
            "must be between 0.01 and 86400 seconds, got {seconds}"
        ))
    }
}

/// `--vm-cpus N`: 1 to 64.
pub fn vm_cpus(text: &str) -> Result<u32, String> {
    let cpus = number(text)?;
    if (1..=64).contains(&cpus) {
        Ok(cpus)
    } else {
        Err(format!("--vm-cpus {cpus} is not in 1..=64"))
    }
}

/// `--vm-tx-queue-size N`: virtio's queue sizes, 256, 512 or 1024.
pub fn vm_tx_queue_size(text: &str) -> Result<u32, String> {
    let size = number(text)?;
    if matches!(size, 256 | 512 | 1024) {
        Ok(size)
    } else {
        Err(format!("--vm-tx-queue-size {size} is not 256, 512 or 1024"))
    }
}

/// `--vm-memory SIZE`: MiB, or with an M or G suffix; 128M to 1024G.
pub fn vm_memory_mib(text: &str) -> Result<u64, String> {
    let invalid = || format!("invalid --vm-memory '{text}' (e.g. 1024, 512M, 2G)");
    let trimmed = text.trim();
    let (number, factor) = match trimmed.strip_suffix(['G', 'g']) {
        Some(number) => (number, 1024),
        None => (trimmed.strip_suffix(['M', 'm']).unwrap_or(trimmed), 1),
    };
    let mib = number
        .parse::<u64>()
        .ok()
        .and_then(|number| number.checked_mul(factor))
        .ok_or_else(invalid)?;
    if !(128..=1 << 20).contains(&mib) {
        return Err(format!(
            "--vm-memory '{text}' is not between 128M and 1024G"
        ));
    }
    Ok(mib)
}

/// `--vm-timeout SECS`: a positive number of seconds.
pub fn vm_timeout(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds > 0.0 && Duration::try_from_secs_f64(seconds).is_ok() {
        Ok(seconds)
    } else {
        Err(format!(
            "--vm-timeout {seconds} is not a positive number of seconds"
        ))
    }
}

/// `--timeout SECS` of `bisect start`: a positive number of seconds.
pub fn command_timeout(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds > 0.0 && Duration::try_from_secs_f64(seconds).is_ok() {
        Ok(seconds)
    } else {
        Err(format!(
            "--timeout {seconds} is not a positive number of seconds"
        ))
    }
}

/// `--min-effect PCT` of `bisect start`: a percentage, 0 or more.
pub fn min_effect_pct(text: &str) -> Result<f64, String> {
    let pct: f64 = number(text)?;
    if pct.is_finite() && pct >= 0.0 {
        Ok(pct)
    } else {
        Err(format!("--min-effect {pct} is not a percentage >= 0"))
    }
}

/// `--end-repeats N` of `bisect start`: 2 or more, to see each end's
/// noise.
pub fn end_repeats(text: &str) -> Result<u32, String> {
    match number(text)? {
        n if n < 2 => Err(format!("--end-repeats {n} is below 2")),
        n => Ok(n),
    }
}

/// `--max-repeats N` of `bisect start`: at least the repeats a step needs.
pub fn max_repeats(text: &str) -> Result<u32, String> {
    let n = number(text)?;
    let min_repeats = bisect::decision::DecisionConfig::default().min_repeats;
    if n < min_repeats {
        Err(format!(
            "--max-repeats {n} is below the {min_repeats} repeats a step needs"
        ))
    } else {
        Ok(n)
    }
}

/// Most measurements at once (`--jobs`): more testbeds than this are
/// not run from one process.
pub const MAX_JOBS: u32 = 64;

/// `--jobs K` of `bisect run` and `plan`: 1 to [`MAX_JOBS`].
pub fn jobs(text: &str) -> Result<u32, String> {
    match number(text)? {
        0 => Err("--jobs must be at least 1 (1 measures one commit at a time)".to_string()),
        n if n > MAX_JOBS => Err(format!(
            "--jobs {n} is above the {MAX_JOBS} this runs at once"
        )),
        n => Ok(n),
    }
}

/// `--effect PCT` of `plan`: a change above 0% and below 100%.
pub fn plan_effect_pct(text: &str) -> Result<f64, String> {
    let pct: f64 = number(text)?;
    if pct.is_finite() && pct > 0.0 && pct < 100.0 {
        Ok(pct)
    } else {
        Err(format!(
            "--effect {pct} is not a change above 0% and below 100%"
        ))
    }
}

/// `--cv PCT` of `plan`: a noise above 0% and below 100% (a bisection
/// of noise-free runs needs no plan).
pub fn plan_cv_pct(text: &str) -> Result<f64, String> {
    let pct: f64 = number(text)?;
    if pct.is_finite() && pct > 0.0 && pct < 100.0 {
        Ok(pct)
    } else {
        Err(format!("--cv {pct} is not a noise above 0% and below 100%"))
    }
}

/// `--seconds SECS` of `plan`: 0 or more.
pub fn plan_seconds(text: &str) -> Result<f64, String> {
    let seconds: f64 = number(text)?;
    if seconds.is_finite() && seconds >= 0.0 {
        Ok(seconds)
    } else {
        Err(format!(
            "--seconds {seconds} is not a number of seconds >= 0"
        ))
    }
}

/// `--commits N` of `plan`: at least one, at most
/// [`bisect::plan::MAX_COMMITS`].
pub fn plan_commits(text: &str) -> Result<usize, String> {
    match number(text)? {
        0 => Err("--commits must be at least 1".to_string()),
        n_commits if n_commits > bisect::plan::MAX_COMMITS => Err(format!(
            "--commits is at most {} (a longer range cannot be simulated in seconds)",
            bisect::plan::MAX_COMMITS
        )),
        n_commits => Ok(n_commits),
    }
}

/// The limit of `archive prune --older-than`: an age before now, or a
/// time.
#[derive(Clone, Debug, PartialEq)]
pub enum Cutoff {
    /// Runs started longer ago than this.
    Age(Duration),
    /// Runs started before this UTC time, as runs are stored (six
    /// fraction digits).
    Before(String),
}

/// `--older-than AGE|DATE` of `archive prune`: a whole number of hours,
/// days or weeks (`36h`, `90d`, `12w`), a date (`2026-09-01`, its
/// midnight UTC) or a UTC time (`2026-09-01T12:00:00Z`).
pub fn cutoff(text: &str) -> Result<Cutoff, String> {
    let unit_seconds = match text.chars().last() {
        Some('h') => Some(3600),
        Some('d') => Some(86_400),
        Some('w') => Some(7 * 86_400),
        _ => None,
    };
    if let Some(unit_seconds) = unit_seconds
        && let Ok(count) = text[..text.len() - 1].parse::<u64>()
    {
        return count
            .checked_mul(unit_seconds)
            .map(|seconds| Cutoff::Age(Duration::from_secs(seconds)))
            .ok_or_else(|| format!("--older-than {text} is too long ago"));
    }
    let time = if text.len() == 10 {
        format!("{text}T00:00:00Z")
    } else {
        text.to_string()
    };
    if run_record::time::is_rfc3339_utc(&time) {
        return Ok(Cutoff::Before(run_record::time::sortable_utc(&time)));
    }
    Err(format!(
        "--older-than takes an age (90d, 12w, 36h), a date (2026-09-01) or a UTC \
         time (2026-09-01T12:00:00Z), got '{text}'"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_takes_mebibytes_and_suffixes() {
        assert_eq!(vm_memory_mib("1024").unwrap(), 1024);
        assert_eq!(vm_memory_mib("512M").unwrap(), 512);
        assert_eq!(vm_memory_mib("2G").unwrap(), 2048);
        assert!(vm_memory_mib("16").is_err());
        assert!(vm_memory_mib("lots").is_err());
        // 2^54 G overflows u64 MiB: refused, not wrapped round.
        assert!(vm_memory_mib("18014398509481984G").is_err());
        assert!(vm_memory_mib("18014398509481985G").is_err());
    }

    #[test]
    fn ranges_name_the_option_and_the_value() {
        assert_eq!(
            interim_seconds("0").unwrap_err(),
            "interim interval (-D) must be between 0.01 and 3600, got 0"
        );
        assert_eq!(interim_seconds("0.5"), Ok(0.5));
        assert_eq!(rounds("0").unwrap_err(), "-n must be at least 1");
        assert_eq!(vm_cpus("65").unwrap_err(), "--vm-cpus 65 is not in 1..=64");
        assert_eq!(end_repeats("1").unwrap_err(), "--end-repeats 1 is below 2");
        assert!(control_timeout("inf").is_err());
        assert!(command_timeout("-1").is_err());
        // Seconds beyond what a Duration holds are no timeout.
        assert!(command_timeout("1e300").is_err());
        assert!(vm_timeout("1e300").is_err());
        assert_eq!(vm_timeout("30"), Ok(30.0));
        assert!(min_effect_pct("NaN").is_err());
        assert_eq!(
            plan_effect_pct("0").unwrap_err(),
            "--effect 0 is not a change above 0% and below 100%"
        );
        assert_eq!(
            plan_cv_pct("0").unwrap_err(),
            "--cv 0 is not a noise above 0% and below 100%"
        );
        assert!(plan_cv_pct("inf").is_err());
        assert!(plan_seconds("-1").is_err());
        assert_eq!(
            plan_commits("0").unwrap_err(),
            "--commits must be at least 1"
        );
        assert_eq!(plan_effect_pct("2.5"), Ok(2.5));
    }

    #[test]
    fn a_cutoff_is_an_age_a_date_or_a_utc_time() {
        assert_eq!(
            cutoff("90d"),
            Ok(Cutoff::Age(Duration::from_secs(90 * 86_400)))
        );
        assert_eq!(
            cutoff("36h"),
            Ok(Cutoff::Age(Duration::from_secs(36 * 3600)))
        );
        assert_eq!(
            cutoff("2w"),
            Ok(Cutoff::Age(Duration::from_secs(14 * 86_400)))
        );
        assert_eq!(
            cutoff("2026-09-01"),
            Ok(Cutoff::Before("2026-09-01T00:00:00.000000Z".to_string()))
        );
        assert_eq!(
            cutoff("2026-09-01T12:00:00.5Z"),
            Ok(Cutoff::Before("2026-09-01T12:00:00.500000Z".to_string()))
        );
        for refused in [
            "",
            "d",
            "-3d",
            "1y",
            "2026-02-30",
            "2026-09-01T12:00:00+02:00",
        ] {
            assert!(cutoff(refused).is_err(), "{refused}");
        }
        assert!(cutoff("99999999999999999w").is_err());
    }
}
