//! Progress of a running bisection on stderr: the step and its estimated
//! total (log2 of what is left), the commit, samples so far, and a rough
//! estimate of the time left. Shown only when stderr is a terminal (or
//! with `-v`), never with `-q`.

use bisect::engine::{Phase, Progress};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Samples a step takes, on average, for the estimate of time left.
const SAMPLES_PER_STEP: u32 = 3;

/// Prints progress lines.
pub struct ProgressPrinter {
    enabled: bool,
    started: Instant,
    n_fresh: u32,
    confirm_repeats: u32,
}

impl ProgressPrinter {
    /// A printer that prints when stderr is a terminal or `verbose`, and
    /// never when `quiet`.
    pub fn new(quiet: bool, verbose: bool, confirm_repeats: u32) -> ProgressPrinter {
        ProgressPrinter {
            enabled: !quiet && (verbose || std::io::stderr().is_terminal()),
            started: Instant::now(),
            n_fresh: 0,
            confirm_repeats,
        }
    }

    /// Whether anything is printed.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Reports the measurement about to start.
    pub fn show(&mut self, progress: &Progress<'_>) {
        let seconds_per_sample = (self.n_fresh > 0)
            .then(|| self.started.elapsed().as_secs_f64() / f64::from(self.n_fresh));
        self.n_fresh += 1;
        if !self.enabled {
            return;
        }
        let commit = &progress.commit;
        let short = &commit.id[..commit.id.len().min(12)];
        let subject: String = commit.subject.chars().take(36).collect();
        let where_ = match progress.phase {
            Phase::Ends => "measuring the ends".to_string(),
            Phase::Steps => format!("step {} of ~{}", progress.step, progress.est_steps_total),
            Phase::Confirm => "confirming".to_string(),
        };
        let steps_left = progress
            .est_steps_total
            .saturating_sub(progress.step.saturating_sub(1));
        let samples_left = match (progress.phase, progress.est_samples_left) {
            (Phase::Confirm, _) => self.confirm_repeats,
            (_, Some(samples_left)) => samples_left + 2 * self.confirm_repeats,
            (_, None) => steps_left * SAMPLES_PER_STEP + 2 * self.confirm_repeats,
        };
        let eta = match seconds_per_sample {
            Some(seconds) => {
                let minutes = seconds * f64::from(samples_left) / 60.0;
                if minutes < 1.0 {
                    ", <1 min left".to_string()
                } else {
                    format!(", ~{minutes:.0} min left")
                }
            }
            None => String::new(),
        };
        let line = format!(
            "netbisect: {where_}: {short} {subject}: sample {} ({} taken, {} candidates{eta})",
            progress.n_samples + 1,
            progress.n_measurements,
            progress.candidates_left,
        );
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{line}");
    }
}
