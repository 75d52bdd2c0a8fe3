//! CPU accounting of one host over a measured window: system-wide time by
//! state from `/proc/stat`, the CPU time of the tool's own data threads
//! from `getrusage(RUSAGE_THREAD)`, and service demand in netperf's units.
//!
//! Utilisation follows netperf's `/proc/stat` method (netcpu_procstat):
//! the aggregate `cpu` line is read at both ends of the window, every
//! state's ticks are differenced, and utilisation is 100% minus the idle
//! share. Time in iowait is not idle there, so it counts as busy here
//! too. `guest` and `guest_nice` are already inside `user` and `nice` on
//! Linux, so they are not added again.

use run_record::record::HostCpu;
use std::io;
use std::time::{Duration, Instant};

/// Ticks of every CPU state, summed over all CPUs, at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatTicks {
    /// User.
    pub user: u64,
    /// Niced user.
    pub nice: u64,
    /// System.
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Waiting for I/O.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts.
    pub softirq: u64,
    /// Stolen by the hypervisor.
    pub steal: u64,
}

/// Why the CPU could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    /// `/proc/stat` could not be read.
    #[error("cannot read /proc/stat: {0}")]
    Read(io::Error),
    /// `/proc/stat` has no aggregate `cpu` line that parses.
    #[error("/proc/stat has no aggregate cpu line")]
    Format,
    /// `getrusage` failed.
    #[error("getrusage failed: {0}")]
    Rusage(io::Error),
}

impl StatTicks {
    /// Parses the aggregate `cpu` line of `/proc/stat` text. Fields a
    /// kernel does not have (steal on old kernels) read as zero.
    pub fn parse(text: &str) -> Result<StatTicks, CpuError> {
        let line = text
            .lines()
            .find(|line| line.starts_with("cpu "))
            .ok_or(CpuError::Format)?;
        let mut values = [0u64; 8];
        let mut n_values = 0;
        for (slot, field) in values.iter_mut().zip(line.split_whitespace().skip(1)) {
            *slot = field.parse().map_err(|_| CpuError::Format)?;
            n_values += 1;
        }
        if n_values < 4 {
            return Err(CpuError::Format);
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal] = values;
        Ok(StatTicks {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
        })
    }

    /// Reads `/proc/stat` now.
    pub fn read() -> Result<StatTicks, CpuError> {
        let text = std::fs::read_to_string("/proc/stat").map_err(CpuError::Read)?;
        StatTicks::parse(&text)
    }

    fn delta(&self, later: &StatTicks) -> StatTicks {
        // Counters only grow; a decrease (a CPU going offline takes its
        // ticks with it) counts as nothing rather than wrapping.
        let sub = |before: u64, after: u64| after.saturating_sub(before);
        StatTicks {
            user: sub(self.user, later.user),
            nice: sub(self.nice, later.nice),
            system: sub(self.system, later.system),
            idle: sub(self.idle, later.idle),
            iowait: sub(self.iowait, later.iowait),
            irq: sub(self.irq, later.irq),
            softirq: sub(self.softirq, later.softirq),
            steal: sub(self.steal, later.steal),
        }
    }

    fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// User and system CPU time of a thread or process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rusage {
    /// User time.
    pub user: Duration,
    /// System time.
    pub system: Duration,
}

fn timeval(value: libc::timeval) -> Duration {
    let seconds = u64::try_from(value.tv_sec).unwrap_or(0);
    let micros = u64::try_from(value.tv_usec).unwrap_or(0);
    Duration::from_secs(seconds) + Duration::from_micros(micros)
}

impl Rusage {
    /// The calling thread's CPU time so far. `getrusage` is written by
    /// hand: rustix does not have it.
    pub fn thread() -> Result<Rusage, CpuError> {
        // SAFETY: rusage is plain data for which all zeroes is valid.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: the pointer is to a live rusage the call fills.
        let result = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        if result != 0 {
            return Err(CpuError::Rusage(io::Error::last_os_error()));
        }
        Ok(Rusage {
            user: timeval(usage.ru_utime),
            system: timeval(usage.ru_stime),
        })
    }

    /// The time used since `earlier`.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }

    /// The sum of two usages.
    pub fn plus(&self, other: &Rusage) -> Rusage {
        Rusage {
            user: self.user + other.user,
            system: self.system + other.system,
        }
    }
}

/// The CPU counters of a host at the start of a window.
#[derive(Clone, Copy, Debug)]
pub struct CpuMark {
    ticks: StatTicks,
    at: Instant,
}

impl CpuMark {
    /// Reads the counters now.
    pub fn now() -> Result<CpuMark, CpuError> {
        Ok(CpuMark {
            ticks: StatTicks::read()?,
            at: Instant::now(),
        })
    }

    /// Reads the counters again: the window from the mark to now.
    pub fn stop(&self) -> Result<CpuSpan, CpuError> {
        let later = StatTicks::read()?;
        Ok(CpuSpan {
            before: self.ticks,
            after: later,
            window: self.at.elapsed(),
        })
    }
}

/// The counters of a host at both ends of a window.
#[derive(Clone, Copy, Debug)]
pub struct CpuSpan {
    before: StatTicks,
    after: StatTicks,
    window: Duration,
}

impl CpuSpan {
    /// The host's CPU over the window, with `threads` the CPU time of the
    /// tool's data threads in it.
    pub fn host_cpu(&self, n_cpus: u32, threads: Rusage) -> HostCpu {
        host_cpu(&self.before, &self.after, self.window, n_cpus, threads)
    }
}

/// The number of CPUs `/proc/stat` covers: one `cpuN` line each.
pub fn n_cpus() -> Result<u32, CpuError> {
    let text = std::fs::read_to_string("/proc/stat").map_err(CpuError::Read)?;
    let count = text
        .lines()
        .filter(|line| {
            line.strip_prefix("cpu")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .count();
    Ok(u32::try_from(count).unwrap_or(u32::MAX).max(1))
}

/// The breakdown of the window between two readings.
pub fn host_cpu(
    before: &StatTicks,
    after: &StatTicks,
    window: Duration,
    n_cpus: u32,
    threads: Rusage,
) -> HostCpu {
    let delta = before.delta(after);
    let total = delta.total();
    let pct = |ticks: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * ticks as f64 / total as f64
        }
    };
    // No tick at all passed (a window shorter than a tick): nothing was
    // seen, which reads as idle rather than as a made-up figure.
    let idle_pct = if total == 0 { 100.0 } else { pct(delta.idle) };
    HostCpu {
        window_s: window.as_secs_f64(),
        n_cpus,
        util_pct: 100.0 - idle_pct,
        user_pct: pct(delta.user),
        nice_pct: pct(delta.nice),
        system_pct: pct(delta.system),
        iowait_pct: pct(delta.iowait),
        irq_pct: pct(delta.irq),
        softirq_pct: pct(delta.softirq),
        steal_pct: pct(delta.steal),
        idle_pct,
        process_user_s: threads.user.as_secs_f64(),
        process_system_s: threads.system.as_secs_f64(),
    }
}

/// Service demand in netperf's units: microseconds of CPU (over all
/// `n_cpus`) per unit of work, where a unit is a KB (1024 bytes) for
/// stream tests and a transaction for request/response tests, and
/// `units_per_s` is the rate of units over the window. netperf's
/// `calc_service_demand`: `util_pct * n_cpus / units_per_s * 10000`.
///
/// `None` when nothing moved.
pub fn service_demand(util_pct: f64, n_cpus: u32, units_per_s: f64) -> Option<f64> {
    (units_per_s > 0.0 && units_per_s.is_finite() && util_pct.is_finite())
        .then(|| util_pct / 100.0 * f64::from(n_cpus) * 1e6 / units_per_s)
}

/// The service demand of several iterations: the mean of each
/// iteration's own demand (each from that iteration's utilisation and
/// rate), as netperf's `retrieve_confident_values` averages the
/// iterations of a `-i` run. A run's figure, a sweep row's and a side of
/// a comparison's are all this mean, so the same runs give the same
/// figure everywhere. `None` when no iteration has one.
pub fn mean_service_demand(demands: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, count) = demands
        .into_iter()
        .flatten()
        .fold((0.0, 0usize), |(sum, count), demand| {
            (sum + demand, count + 1)
        });
    (count > 0).then(|| sum / count as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  1000 10 500 8000 100 5 20 3 7 0\n\
                          cpu0 500 5 250 4000 50 2 10 1 3 0\n\
                          cpu1 500 5 250 4000 50 3 10 2 4 0\nintr 1\n";
    const AFTER: &str = "cpu  1300 10 700 8400 140 5 40 5 7 0\n\
                         cpu0 650 5 350 4200 70 2 20 2 3 0\n\
                         cpu1 650 5 350 4200 70 3 20 3 4 0\nintr 1\n";

    #[test]
    fn breakdown_follows_netperf() {
        let before = StatTicks::parse(BEFORE).unwrap();
        let after = StatTicks::parse(AFTER).unwrap();
        let threads = Rusage {
            user: Duration::from_millis(250),
            system: Duration::from_millis(500),
        };
        let cpu = host_cpu(&before, &after, Duration::from_secs(1), 2, threads);
        // Deltas: user 300, system 200, idle 400, iowait 40, softirq 20,
        // steal 2; 962 ticks in all.
        let total = 962.0;
        assert!((cpu.idle_pct - 100.0 * 400.0 / total).abs() < 1e-9);
        assert!((cpu.util_pct - 100.0 * 562.0 / total).abs() < 1e-9);
        assert!((cpu.iowait_pct - 100.0 * 40.0 / total).abs() < 1e-9);
        let parts = cpu.user_pct
            + cpu.nice_pct
            + cpu.system_pct
            + cpu.iowait_pct
            + cpu.irq_pct
            + cpu.softirq_pct
            + cpu.steal_pct;
        assert!((parts - cpu.util_pct).abs() < 1e-9);
        assert_eq!(cpu.process_user_s, 0.25);
        assert_eq!(cpu.process_system_s, 0.5);
    }

    #[test]
    fn bad_stat_text_is_an_error() {
        assert!(StatTicks::parse("intr 1\n").is_err());
        assert!(StatTicks::parse("cpu  1 2 x 4\n").is_err());
        assert!(StatTicks::parse("cpu  1 2\n").is_err());
        let old = StatTicks::parse("cpu  1 2 3 4\n").unwrap();
        assert_eq!(old.steal, 0);
    }

    #[test]
    fn several_iterations_average_their_own_demands() {
        // 10% at 100 units/s and 30% at 200 units/s on 1 CPU: 1000 and
        // 1500 us per unit; the mean of the two, not 20% / 150.
        let demands = [
            service_demand(10.0, 1, 100.0),
            service_demand(30.0, 1, 200.0),
        ];
        assert_eq!(mean_service_demand(demands), Some(1250.0));
        assert_eq!(mean_service_demand([None, None]), None);
    }

    #[test]
    fn service_demand_in_netperf_units() {
        // 50% of 4 CPUs for 10_000 KB/s: 2 CPU-seconds per second over
        // 10_000 KB is 200 us/KB.
        assert_eq!(service_demand(50.0, 4, 10_000.0), Some(200.0));
        assert_eq!(service_demand(50.0, 4, 0.0), None);
    }

    #[test]
    fn this_host_is_measurable() {
        let mark = CpuMark::now().unwrap();
        let start = Rusage::thread().unwrap();
        let mut spin = 0u64;
        let until = Instant::now() + Duration::from_millis(30);
        while Instant::now() < until {
            spin = spin.wrapping_add(1);
        }
        let used = Rusage::thread().unwrap().since(&start);
        let cpu = mark.stop().unwrap().host_cpu(n_cpus().unwrap(), used);
        assert!(spin > 0);
        assert!(cpu.window_s >= 0.03);
        assert!((0.0..=100.0).contains(&cpu.util_pct));
        assert!(cpu.process_user_s + cpu.process_system_s > 0.0);
    }
}
