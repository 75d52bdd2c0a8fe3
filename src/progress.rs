//! How long work tells where it stands, one way for every command: on a
//! terminal, a live line on stderr (indicatif) saying what runs, how far
//! it is and the time left; when stderr is a file or a pipe, a plain
//! timestamped line at each step, no carriage returns. Never on stdout,
//! so `--json` stays whole. `--progress never` (or `-q`, unless
//! `--progress always`) says nothing.

use crate::global_options::GlobalOptions;
use crate::render::text::plain_lines;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::Duration;

/// Where progress goes.
enum Target {
    /// Nowhere.
    Silent,
    /// A live line on the terminal.
    Live(ProgressBar),
    /// Timestamped lines.
    Lines,
}

/// The progress of one long piece of work.
pub struct Reporter {
    target: Target,
}

impl Reporter {
    /// A reporter for `total` steps (unknown: `None`), as `global` asks
    /// (`--progress`, `-q`) and stderr allows.
    pub fn new(global: &GlobalOptions, total: impl Into<Option<u64>>) -> Reporter {
        let total = total.into();
        let target = if !global.shows_progress() {
            Target::Silent
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
            let template = if total.is_some() {
                "{spinner} {elapsed:>4} [{pos}/{len}] {wide_msg}"
            } else {
                "{spinner} {elapsed:>4} {wide_msg}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Target::Live(bar)
        } else {
            Target::Lines
        };
        Reporter { target }
    }

    /// What runs now: the live line's text; a plain line in a log. Each
    /// line of `text` is printed [`plain_lines`], as every line below.
    pub fn status(&self, text: &str) {
        let text = &*plain_lines(text);
        match &self.target {
            Target::Silent => {}
            Target::Live(bar) => bar.set_message(text.to_string()),
            Target::Lines => plain_line(text),
        }
    }

    /// A line that stays (a warning, an error, a step done): above the
    /// live line on a terminal. Lines after the first of `text` are its
    /// continuation, printed as they are.
    pub fn line(&self, text: &str) {
        let text = &*plain_lines(text);
        match &self.target {
            Target::Silent => {}
            Target::Live(bar) => bar.println(format!("netbisect: {text}")),
            Target::Lines => {
                let mut lines = text.lines();
                plain_line(lines.next().unwrap_or_default());
                for more in lines {
                    let _ = writeln!(std::io::stderr().lock(), "{more}");
                }
            }
        }
    }

    /// `n` more steps done.
    pub fn advance(&self, n: u64) {
        if let Target::Live(bar) = &self.target {
            bar.inc(n);
        }
    }

    /// Removes the live line.
    pub fn finish(&self) {
        if let Target::Live(bar) = &self.target {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.finish();
    }
}

/// One line of a log: the time (UTC, as a log reads it) and the text.
fn plain_line(text: &str) {
    let now = run_record::time::now_rfc3339();
    // 2026-12-01T17:02:03.123456Z -> 2026-12-01 17:02:03
    let stamp = now.get(..19).unwrap_or(&now).replace('T', " ");
    let _ = writeln!(std::io::stderr().lock(), "{stamp} netbisect: {text}");
}

/// Seconds as a person reads a duration: `45 s`, `3 min`, `1 h 20 min`.
pub fn duration_text(seconds: f64) -> String {
    let seconds = seconds.max(0.0).round() as u64;
    match seconds {
        0..=89 => format!("{seconds} s"),
        90..=5399 => format!("{} min", (seconds + 30) / 60),
        _ => format!("{} h {} min", seconds / 3600, (seconds % 3600 + 30) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::duration_text;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration_text(4.4), "4 s");
        assert_eq!(duration_text(89.0), "89 s");
        assert_eq!(duration_text(95.0), "2 min");
        assert_eq!(duration_text(4000.0), "67 min");
        assert_eq!(duration_text(5400.0), "1 h 30 min");
        assert_eq!(duration_text(-3.0), "0 s");
    }
}
