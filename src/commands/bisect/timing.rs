//! What a bisection cost in time, read from its journal: the jobs it ran
//! at once, its rounds and its wall-clock. The report of a bisection of
//! several jobs says them, and its reproduce line keeps `--jobs`.

use super::session::{Loaded, load_events};
use crate::bisection::report::Timing;
use crate::exit::{self, Context};
use bisect::JournalEvent;
use bisect::engine;
use std::collections::BTreeMap;

/// The timing of `loaded`'s bisection from its journal.
pub(super) fn timing_of(loaded: &Loaded) -> exit::Result<Timing> {
    let events = load_events(loaded)?;
    let jobs = engine::journaled_jobs(&loaded.graph, &loaded.spec.config, &events)
        .context("failed to replay the journal")?
        .map_or(1, |(jobs, _)| jobs);
    let times = loaded.archive.session_event_times(loaded.session.id)?;
    Ok(Timing {
        jobs,
        rounds: rounds(&events),
        wall_s: wall_seconds(&events, &times),
    })
}

/// The rounds of a journal: each repeat is taken to last one unit and to
/// start when the event that starts it is written, which is when the
/// repeat before it came back; the rounds are when the last one came
/// back. With one job, each repeat is one round. This is the figure the
/// simulator prints as `rounds` (`scripts/bench-bisect-sim.sh --jobs`),
/// so that a report and a plan can be set side by side.
pub(super) fn rounds(events: &[JournalEvent]) -> u32 {
    let mut clock = 0;
    // The slots with a repeat in flight, and when each ends.
    let mut running: BTreeMap<u32, u32> = BTreeMap::new();
    for event in events {
        match event {
            JournalEvent::Started { slot, .. } => {
                running.insert(*slot, clock + 1);
            }
            JournalEvent::Sample { slot, .. } | JournalEvent::Skip { slot, .. } => match slot {
                Some(slot) => {
                    let ends = running.remove(slot).unwrap_or(clock + 1);
                    clock = clock.max(ends);
                }
                None => clock += 1,
            },
            // What was in flight was thrown away and is started again.
            JournalEvent::Interrupted { .. } => running.clear(),
            _ => {}
        }
    }
    clock
}

/// The wall-clock of a journal whose events were written at `times`: the
/// spans between consecutive events, less those that follow an
/// interruption (the bisection stood still until it was run again).
fn wall_seconds(events: &[JournalEvent], times: &[String]) -> Option<f64> {
    if events.len() != times.len() {
        return None;
    }
    let seconds: Vec<f64> = times
        .iter()
        .map(|time| run_record::time::utc_seconds(time))
        .collect::<Option<_>>()?;
    let mut wall_s = 0.0;
    for (idx, pair) in seconds.windows(2).enumerate() {
        if !matches!(events[idx], JournalEvent::Interrupted { .. }) {
            wall_s += (pair[1] - pair[0]).max(0.0);
        }
    }
    Some(wall_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bisect::journal::JournalSample;

    fn started(slot: u32) -> JournalEvent {
        JournalEvent::Started {
            commit: format!("c{slot}"),
            slot,
        }
    }

    fn sample(slot: Option<u32>) -> JournalEvent {
        JournalEvent::Sample {
            commit: "c".to_string(),
            sample: JournalSample {
                value: 1.0,
                run_id: None,
            },
            slot,
        }
    }

    #[test]
    fn rounds_count_the_repeats_that_ran_one_after_another() {
        // One job: a round a repeat.
        assert_eq!(rounds(&[sample(None), sample(None), sample(None)]), 3);
        // Two at once, twice over, then one alone: three rounds.
        let events = [
            started(0),
            started(1),
            sample(Some(0)),
            started(0),
            sample(Some(1)),
            started(1),
            sample(Some(0)),
            sample(Some(1)),
            started(0),
            sample(Some(0)),
        ];
        assert_eq!(rounds(&events), 3);
        // What an interruption threw away took no round.
        let events = [
            started(0),
            started(1),
            JournalEvent::Interrupted {
                commit: "c0".to_string(),
                signal: "SIGINT".to_string(),
            },
            started(0),
            sample(Some(0)),
        ];
        assert_eq!(rounds(&events), 1);
    }

    #[test]
    fn the_wall_clock_leaves_out_the_pause_after_an_interruption() {
        let events = [
            sample(None),
            JournalEvent::Interrupted {
                commit: "c".to_string(),
                signal: "SIGTERM".to_string(),
            },
            sample(None),
            sample(None),
        ];
        let times = [
            "2026-12-06T10:00:00Z",
            "2026-12-06T10:00:30Z",
            "2026-12-06T18:00:00Z",
            "2026-12-06T18:00:12.5Z",
        ]
        .map(String::from);
        assert_eq!(wall_seconds(&events, &times), Some(42.5));
        assert_eq!(wall_seconds(&events, &times[..3]), None);
    }
}
