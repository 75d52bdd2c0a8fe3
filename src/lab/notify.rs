//! The outbox's sender: every report due is handed to its command
//! (`--notify CMD`, run with `sh -c`, the report on its stdin, as
//! `sendmail -t` reads a mail), once. netbisect never speaks SMTP: the
//! command is the lab's own (sendmail, a chat hook, a script that files
//! a ticket). It sees `NETBISECT_REGRESSION` (the regression's id) and
//! `NETBISECT_SUBJECT` (the report's first line, the change and the
//! culprit, for a mail's subject).
//!
//! A report is taken under a hold (as a worker takes a job), so that two
//! trackers never run its command at once; it is marked sent only when
//! the command exits 0. A command that fails, times out or cannot start
//! is logged with its reason, and the report is due again after a delay
//! that doubles with each failure ([`retry_delay`]), never dropped. A
//! tracker killed between the command's exit and the mark that follows it
//! (one statement) is the one way a report can be handed over twice.

use archive::lab::Notification;
use archive::{Archive, ArchiveError};
use child_process::runner::{self, CommandOutcome};
use std::time::Duration;

/// How long a notification command may run before it is killed (and
/// the report tried again later).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// How the sender retries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retry {
    /// The delay after the first failure; each failure doubles it.
    pub first: Duration,
    /// The longest delay.
    pub longest: Duration,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            first: Duration::from_secs(30),
            longest: Duration::from_secs(3600),
        }
    }
}

/// The delay before the attempt after `attempts` failed ones.
pub fn retry_delay(retry: Retry, attempts: i64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    retry
        .first
        .saturating_mul(2u32.saturating_pow(doublings))
        .min(retry.longest)
}

/// What sending one report did, for the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The command took it.
    Handed {
        /// The regression it reports.
        regression_id: i64,
        /// The command.
        command: String,
    },
    /// The command failed; the report is due again after `retry`.
    Failed {
        /// The regression it reports.
        regression_id: i64,
        /// Why, in a few words.
        error: String,
        /// When it is tried again.
        retry: Duration,
    },
}

/// Hands every report that is due to its command, as `sender`; returns
/// what each did.
pub fn send_due(
    archive: &mut Archive,
    sender: &str,
    retry: Retry,
) -> Result<Vec<Sent>, ArchiveError> {
    let mut sent = Vec::new();
    let hold = COMMAND_TIMEOUT + Duration::from_secs(60);
    while let Some(notification) = archive.take_notification(sender, hold)? {
        let outcome = hand_over(&notification);
        let hold_of = notification.hold();
        match outcome {
            Ok(command) => {
                archive.notification_sent(hold_of)?;
                sent.push(Sent::Handed {
                    regression_id: notification.regression_id,
                    command,
                });
            }
            Err(error) => {
                let delay = retry_delay(retry, notification.attempts);
                archive.notification_failed(hold_of, &error, delay)?;
                sent.push(Sent::Failed {
                    regression_id: notification.regression_id,
                    error,
                    retry: delay,
                });
            }
        }
    }
    Ok(sent)
}

/// Runs the command of `notification` with its report on stdin; the
/// command, or why it failed.
fn hand_over(notification: &Notification) -> Result<String, String> {
    let Some(command) = &notification.command else {
        return Ok(String::new());
    };
    let subject = notification
        .body
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .to_string();
    let env = [
        (
            "NETBISECT_REGRESSION".to_string(),
            notification.regression_id.to_string(),
        ),
        ("NETBISECT_SUBJECT".to_string(), subject),
    ];
    let outcome = runner::run_command_with_input(
        command,
        &std::env::temp_dir(),
        &env,
        Some(COMMAND_TIMEOUT),
        notification.body.clone().into_bytes(),
    )
    .map_err(|err| format!("cannot run the notification command: {err}"))?;
    match outcome {
        CommandOutcome::Exited { code: Some(0), .. } => Ok(command.clone()),
        CommandOutcome::Exited {
            code, stderr_tail, ..
        } => {
            let status = code.map_or("killed by a signal".to_string(), |code| {
                format!("exit {code}")
            });
            let last = stderr_tail
                .lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .map_or(String::new(), |line| format!(": {}", line.trim()));
            Err(format!("the notification command failed ({status}){last}"))
        }
        CommandOutcome::TimedOut => Err(format!(
            "the notification command ran past {} s and was stopped",
            COMMAND_TIMEOUT.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use archive::lab::BisectionEnd;

    #[test]
    fn the_delay_doubles_up_to_the_longest() {
        let retry = Retry::default();
        assert_eq!(retry_delay(retry, 1), Duration::from_secs(30));
        assert_eq!(retry_delay(retry, 2), Duration::from_secs(60));
        assert_eq!(retry_delay(retry, 3), Duration::from_secs(120));
        assert_eq!(retry_delay(retry, 40), Duration::from_secs(3600));
    }

    #[test]
    fn a_report_is_handed_over_once_and_a_failed_command_is_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(&dir.path().join("archive.db")).unwrap();
        let inbox = dir.path().join("inbox");
        let flaky = dir.path().join("flaky");
        // Fails once, then files the subject and what it reads.
        let command = format!(
            "if [ ! -e '{flaky}' ]; then touch '{flaky}'; echo no route >&2; exit 75; fi; \
             echo \"[$NETBISECT_REGRESSION] $NETBISECT_SUBJECT\" >> '{inbox}'; cat >> '{inbox}'",
            flaky = flaky.display(),
            inbox = inbox.display()
        );
        let archive::lab::Opened::New(id) = archive.open_regression("t", "g", "b", "{}").unwrap()
        else {
            panic!("not opened");
        };
        assert!(
            archive
                .hold_regression(id, "d", Duration::from_secs(60))
                .unwrap()
        );
        let end = BisectionEnd::Culprit {
            culprit: "c".to_string(),
            report: "Subject: a regression\n\nthe report\n".to_string(),
            command: Some(command),
        };
        assert!(archive.end_regression_bisection(id, "d", &end).unwrap());
        let retry = Retry {
            first: Duration::from_millis(200),
            longest: Duration::from_secs(1),
        };
        let first = send_due(&mut archive, "s", retry).unwrap();
        assert!(
            matches!(&first[..], [Sent::Failed { error, .. }] if error.ends_with("(exit 75): no route")),
            "{first:?}"
        );
        assert!(send_due(&mut archive, "s", retry).unwrap().is_empty());
        std::thread::sleep(Duration::from_millis(400));
        let second = send_due(&mut archive, "s", retry).unwrap();
        assert!(matches!(&second[..], [Sent::Handed { .. }]), "{second:?}");
        assert!(send_due(&mut archive, "s", retry).unwrap().is_empty());
        assert_eq!(
            std::fs::read_to_string(&inbox).unwrap(),
            format!("[{id}] Subject: a regression\nSubject: a regression\n\nthe report\n")
        );
    }
}
