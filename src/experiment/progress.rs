//! Where an experiment stands, through [`crate::progress::Reporter`]: the
//! round, the kernel, the configuration i of C, the seconds a boot and a
//! run took so far and the time left, estimated from them.

use super::{Boot, Experiment};
use crate::global_options::GlobalOptions;
use crate::progress::{Reporter, duration_text};
use std::time::Instant;

/// The progress of one experiment.
pub struct Progress<'a> {
    reporter: Reporter,
    experiment: &'a Experiment,
    /// Boots and runs still to make, this one included.
    boots_left: usize,
    runs_left: usize,
    /// The boot running, its runs, and when it or its last run began.
    boot: Option<Boot>,
    n_runs: usize,
    boot_started: Instant,
    run_started: Instant,
    /// Seconds from a boot's start to its first test, and per run.
    boot_seconds: Vec<f64>,
    run_seconds: Vec<f64>,
}

impl<'a> Progress<'a> {
    /// The progress of `n_runs` runs in `n_boots` boots of `experiment`.
    pub fn new(
        global: &GlobalOptions,
        experiment: &'a Experiment,
        n_boots: usize,
        n_runs: usize,
    ) -> Progress<'a> {
        Progress {
            reporter: Reporter::new(global, n_runs as u64),
            experiment,
            boots_left: n_boots,
            runs_left: n_runs,
            boot: None,
            n_runs: 0,
            boot_started: Instant::now(),
            run_started: Instant::now(),
            boot_seconds: Vec::new(),
            run_seconds: Vec::new(),
        }
    }

    /// A line that stays.
    pub fn say(&self, text: &str) {
        self.reporter.line(text);
    }

    /// `boot` starts, with `n_runs` runs.
    pub fn boot_started(&mut self, boot: Boot, n_runs: usize) {
        self.boot = Some(boot);
        self.n_runs = n_runs;
        self.boot_started = Instant::now();
        self.run_started = Instant::now();
        let side = &self.experiment.sides[boot.side_idx];
        self.reporter.status(&format!(
            "round {}/{}: booting {} ({}) for {} configuration{}{}",
            boot.round,
            self.experiment.rounds,
            side.label,
            side.kernel_name(),
            n_runs,
            if n_runs == 1 { "" } else { "s" },
            self.left()
        ));
    }

    /// Run `run_idx` of the boot ended, with a record or not.
    pub fn run_finished(&mut self, run_idx: usize, name: &str, stored: bool) {
        let seconds = self.run_started.elapsed().as_secs_f64();
        if run_idx > 0 {
            // The first run's time holds the boot; the boot's own time is
            // told by the guest at the boot's end.
            self.run_seconds.push(seconds);
        }
        self.run_started = Instant::now();
        self.runs_left = self.runs_left.saturating_sub(1);
        self.reporter.advance(1);
        let Some(boot) = self.boot else {
            return;
        };
        let side = &self.experiment.sides[boot.side_idx];
        let what = if name.is_empty() { "the test" } else { name };
        let text = format!(
            "round {}/{}: {} ({}) {}/{} {what} {} in {}{}",
            boot.round,
            self.experiment.rounds,
            side.label,
            side.kernel_name(),
            run_idx + 1,
            self.n_runs,
            if stored { "done" } else { "failed" },
            duration_text(seconds),
            self.left()
        );
        self.reporter.status(&text);
    }

    /// The boot ended; `boot_to_test_s` is how long its guest took to
    /// reach the first test, when it did.
    pub fn boot_finished(&mut self, boot_to_test_s: Option<f64>) {
        self.boots_left = self.boots_left.saturating_sub(1);
        match boot_to_test_s {
            Some(seconds) => self.boot_seconds.push(seconds),
            None => self
                .boot_seconds
                .push(self.boot_started.elapsed().as_secs_f64()),
        }
        if let Some(boot) = self.boot.take() {
            let side = &self.experiment.sides[boot.side_idx];
            self.reporter.line(&format!(
                "round {}/{}: {} ({}) done: boot {}, {} run{} in {}",
                boot.round,
                self.experiment.rounds,
                side.label,
                side.kernel_name(),
                boot_to_test_s.map_or_else(|| "failed".to_string(), duration_text),
                self.n_runs,
                if self.n_runs == 1 { "" } else { "s" },
                duration_text(self.boot_started.elapsed().as_secs_f64())
            ));
        }
    }

    /// The live line goes.
    pub fn finish(&self) {
        self.reporter.finish();
    }

    /// "; about N min left", once a boot and a run have been timed.
    fn left(&self) -> String {
        let mean = |values: &[f64]| {
            (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
        };
        let (Some(per_boot), Some(per_run)) = (mean(&self.boot_seconds), mean(&self.run_seconds))
        else {
            return String::new();
        };
        // The boot running is counted in boots_left until it ends.
        let boots_to_come = self
            .boots_left
            .saturating_sub(usize::from(self.boot.is_some()));
        let seconds = boots_to_come as f64 * per_boot + self.runs_left as f64 * per_run;
        format!("; about {} left", duration_text(seconds))
    }
}
