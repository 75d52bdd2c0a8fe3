//! Progress of a running bisection on stderr, through the one progress
//! reporter of every command ([`crate::progress`]: a live line on a
//! terminal, timestamped lines in a log, `--progress`, `-q`): the step and
//! its estimated total (log2 of what is left), the commit, samples so far,
//! and a rough estimate of the time left; a line when the estimated total
//! of steps moves, saying why. Once the ends are measured, one line says
//! what the rest will take, from the estimate the engine journaled
//! ([`bisect::plan`], the figures of `netbisect plan`). When the ends
//! need more than their first `--end-repeats`, two lines say why and how
//! many more repeats of each it takes at most.

use crate::global_options::GlobalOptions;
use crate::progress::Reporter;
use crate::views::bisection::duration;
use bisect::ends::EndsWait;
use bisect::estimate::Estimate;
use bisect::progress::{EndsProgress, Phase, Progress};
use std::time::Instant;

/// Samples a step takes, on average, for the estimate of time left.
const SAMPLES_PER_STEP: u32 = 3;

/// Tells the progress of a bisection.
pub struct ProgressPrinter {
    reporter: Reporter,
    started: Instant,
    n_fresh: u32,
    confirm_repeats: u32,
    estimate_shown: bool,
    /// Why the ends were last said to be measured again.
    ends_wait_shown: Option<EndsWait>,
    /// The estimated total of steps last shown, and the candidates then.
    steps_shown: Option<(u32, u32)>,
}

impl ProgressPrinter {
    /// A printer as `global` asks (`--progress`, `-q`).
    pub fn new(global: &GlobalOptions, confirm_repeats: u32) -> ProgressPrinter {
        ProgressPrinter {
            reporter: Reporter::new(global, None),
            started: Instant::now(),
            n_fresh: 0,
            confirm_repeats,
            estimate_shown: false,
            ends_wait_shown: None,
            steps_shown: None,
        }
    }

    /// A line that stays.
    pub fn say(&self, text: &str) {
        self.reporter.line(text);
    }

    /// Reports the measurement about to start.
    pub fn show(&mut self, progress: &Progress<'_>) {
        let seconds_per_sample = (self.n_fresh > 0)
            .then(|| self.started.elapsed().as_secs_f64() / f64::from(self.n_fresh));
        self.n_fresh += 1;
        if let Some(estimate) = progress.estimate
            && !self.estimate_shown
        {
            self.estimate_shown = true;
            self.reporter.line(&rest_of(estimate));
        }
        if let Some(ends) = &progress.ends
            && ends.wait != EndsWait::FirstRepeats
            && self.ends_wait_shown != Some(ends.wait)
        {
            self.ends_wait_shown = Some(ends.wait);
            self.reporter.line(&ends_again(ends).join("\n"));
        }
        if progress.phase == Phase::Steps {
            if let Some(line) = steps_moved(self.steps_shown, progress) {
                self.reporter.line(&line);
            }
            self.steps_shown = Some((progress.est_steps_total, progress.candidates_left));
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
        self.reporter.status(&format!(
            "{where_}: {short} {subject}: sample {} ({} taken, {} candidates{eta})",
            progress.n_samples + 1,
            progress.n_measurements,
            progress.candidates_left,
        ));
    }
}

/// A line that says the estimated total of steps moved, and why: the
/// estimate is the steps taken and log2 of the candidates left, which
/// falls more slowly than a step a halving when a commit is skipped or a
/// sample leaves the culprit's place unclear, and faster when one
/// settles more than half. `None` while it holds, or the first time.
fn steps_moved(shown: Option<(u32, u32)>, progress: &Progress<'_>) -> Option<String> {
    let (total, candidates) = shown?;
    if total == progress.est_steps_total {
        return None;
    }
    Some(format!(
        "step {}: the estimate is now ~{} steps, was ~{total}:\n  {} candidates \
         left, {candidates} before; the steps to go are log2 of them",
        progress.step, progress.est_steps_total, progress.candidates_left
    ))
}

/// Why the ends are measured beyond their first repeats, and how many
/// more it takes at most, in lines within 80 columns.
fn ends_again(ends: &EndsProgress) -> Vec<String> {
    let figures = ends.difference.as_ref().map(|difference| {
        format!(
            "{:+.1}% [{:+.1}%, {:+.1}%] at {}%",
            difference.diff_pct,
            difference.ci_low_pct,
            difference.ci_high_pct,
            difference.level_pct
        )
    });
    let more = ends.max_each.saturating_sub(ends.n_each);
    let at_most = format!(
        "at most {more} more repeat{} of each",
        if more == 1 { "" } else { "s" }
    );
    match (ends.wait, figures) {
        (EndsWait::Midpoint, figures) => vec![
            format!(
                "the ends differ{}, but",
                figures.map_or(String::new(), |figures| format!(", {figures}"))
            ),
            "  the sequential method needs their midpoint to an eighth of the step:".to_string(),
            format!("  {at_most}"),
        ],
        (EndsWait::FirstRepeats | EndsWait::Unclear, figures) => vec![
            format!(
                "after {} repeats of each end their difference is unclear{}",
                ends.n_each,
                if figures.is_some() { "," } else { ":" }
            ),
            match figures {
                Some(figures) => format!("  {figures}: {at_most}"),
                None => format!("  {at_most}"),
            },
        ],
    }
}

/// What the rest of a bisection will take, in words: one line of the
/// progress, and the status's estimate.
pub fn rest_of(estimate: &Estimate) -> String {
    let mut text = format!(
        "the ends differ by {:.1}% at {:.1}% noise: the rest takes ~{:.0} \
         measurements (95th pct {})",
        estimate.step_pct, estimate.cv_pct, estimate.mean_after_ends, estimate.p95_after_ends
    );
    if let Some([mean_s, p95_s]) = estimate.rest_seconds() {
        text.push_str(&format!(
            ", ~{} (95th pct {}) at {:.1} s a measurement",
            duration(mean_s),
            duration(p95_s),
            estimate.seconds_per_run
        ));
    }
    if estimate.jobs > 1 {
        text.push_str(&format!(", {} at once", estimate.jobs));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ends_say_why_they_are_measured_again() {
        let difference = bisect::ends::Difference::yuen(
            &[100.0, 103.0, 97.0, 101.0, 99.0],
            &[99.0, 102.0, 98.0, 100.5, 97.5],
            bisect::ends::END_CONFIDENCE,
        );
        let ends = EndsProgress {
            wait: EndsWait::Unclear,
            n_each: 5,
            max_each: 100,
            difference,
        };
        let lines = ends_again(&ends);
        assert_eq!(
            lines[0],
            "after 5 repeats of each end their difference is unclear,"
        );
        assert!(
            lines[1].ends_with(" at 99.9%: at most 95 more repeats of each"),
            "{lines:?}"
        );
        let midpoint = ends_again(&EndsProgress {
            wait: EndsWait::Midpoint,
            n_each: 99,
            ..ends
        });
        assert_eq!(midpoint[2], "  at most 1 more repeat of each");
        for line in lines.iter().chain(&midpoint) {
            assert!(line.len() <= 80 && line.is_ascii(), "{line:?}");
        }
    }

    #[test]
    fn a_moved_estimate_is_said_with_its_reason_within_80_columns() {
        let commit = bisect::graph::CommitInfo {
            id: "0123456789abcdef".to_string(),
            subject: "net: a change".to_string(),
            author: "A <a@example.org>".to_string(),
            date: "2026-12-01T00:00:00Z".to_string(),
        };
        let progress = Progress {
            phase: Phase::Steps,
            ends: None,
            step: 12,
            est_steps_total: 17,
            est_samples_left: None,
            commit: &commit,
            n_samples: 0,
            n_measurements: 40,
            candidates_left: 40_000,
            estimate: None,
        };
        assert_eq!(steps_moved(None, &progress), None);
        assert_eq!(steps_moved(Some((17, 80_000)), &progress), None);
        let line = steps_moved(Some((16, 20_000)), &progress).unwrap();
        assert_eq!(
            line,
            "step 12: the estimate is now ~17 steps, was ~16:\n  40000 candidates left, \
             20000 before; the steps to go are log2 of them"
        );
        // The first line under a log's time stamp, the rest as they are.
        let stamp = "2026-12-06 16:00:00 netbisect: ";
        for (idx, line) in line.lines().enumerate() {
            let width = if idx == 0 { stamp.len() } else { 0 } + line.len();
            assert!(width <= 80, "{line:?}");
        }
    }

    #[test]
    fn the_rest_in_words() {
        let estimate = Estimate {
            n_commits: 64,
            step_pct: 5.0,
            cv_pct: 2.0,
            seconds_per_run: 30.0,
            n_trials: 300,
            correct_pct: 99.0,
            refused_pct: 0.0,
            mean_measurements: 40.0,
            p95_measurements: 60,
            max_measurements: 80,
            mean_seconds: 1200.0,
            p95_seconds: 1800.0,
            mean_after_ends: 32.4,
            p95_after_ends: 50,
            jobs: 1,
            mean_rounds: 0.0,
            p95_rounds: 0,
        };
        assert_eq!(
            rest_of(&estimate),
            "the ends differ by 5.0% at 2.0% noise: the rest takes ~32 measurements \
             (95th pct 50), ~16.2 min (95th pct 25.0 min) at 30.0 s a measurement"
        );
        let untimed = Estimate {
            seconds_per_run: 0.0,
            ..estimate
        };
        assert_eq!(
            rest_of(&untimed),
            "the ends differ by 5.0% at 2.0% noise: the rest takes ~32 measurements (95th pct 50)"
        );
    }
}
