//! Figures no real run has, refused on import before a record is built:
//! non-finite or negative figures, rates beyond any link, CPU beyond
//! every CPU a host can have (the ceilings every record is held to,
//! `run_record::record::limits`), a run that took no time, a start far
//! after the import.

use super::{BuildError, ImportOptions, PeerRun};
use run_record::record::limits::{MAX_HOST_CPUS, MAX_THROUGHPUT_BPS, MAX_TRANSACTION_RATE};
use std::time::{Duration, SystemTime};

/// How far past the import a run's stated start may be (clocks of two
/// machines differ; a day more is a wrong clock or a wrong figure).
const MAX_CLOCK_SKEW: Duration = Duration::from_secs(24 * 3600);

/// Refuses figures no real run has: a negative or non-finite figure, a
/// rate beyond any link ([`MAX_THROUGHPUT_BPS`], [`MAX_TRANSACTION_RATE`]),
/// CPU over 100 % times [`MAX_HOST_CPUS`], an elapsed time of 0 or less, a
/// start far in the future.
pub(super) fn check_plausible(run: &PeerRun, options: &ImportOptions) -> Result<(), BuildError> {
    let figures = &run.figures;
    let implausible = |reason: String| Err(BuildError::Implausible(reason));
    let max_cpu_pct = 100.0 * MAX_HOST_CPUS;
    for (name, value, unit, ceiling) in [
        (
            "throughput",
            figures.throughput_bps,
            "bit/s",
            MAX_THROUGHPUT_BPS,
        ),
        (
            "send throughput",
            figures.sent_throughput_bps,
            "bit/s",
            MAX_THROUGHPUT_BPS,
        ),
        (
            "transaction rate",
            figures.transaction_rate,
            "/s",
            MAX_TRANSACTION_RATE,
        ),
        (
            "operation rate",
            figures.operation_rate,
            "/s",
            MAX_TRANSACTION_RATE,
        ),
        ("local CPU", figures.cpu.local_util_pct, "%", max_cpu_pct),
        ("remote CPU", figures.cpu.remote_util_pct, "%", max_cpu_pct),
    ] {
        let Some(value) = value else { continue };
        if !value.is_finite() {
            return implausible(format!("{name} {value} is not a finite number"));
        }
        if value < 0.0 && unit != "%" {
            return implausible(format!("{name} {value} is negative"));
        }
        if value > ceiling {
            return implausible(format!(
                "{name} {value:e} {unit} is beyond {ceiling:e} {unit}, more than any run measures"
            ));
        }
    }
    if let Some(elapsed) = figures
        .elapsed_s
        .filter(|elapsed| !elapsed.is_finite() || *elapsed <= 0.0)
    {
        return implausible(format!("elapsed time {elapsed} s (a run takes time)"));
    }
    if let Some(started) = run.started_at {
        let now = options.imported_at.unwrap_or_else(SystemTime::now);
        if started > now + MAX_CLOCK_SKEW {
            return implausible(format!(
                "start {} is more than a day after the import",
                run_record::time::rfc3339_utc(started)
            ));
        }
    }
    Ok(())
}
