//! The lab as its archive holds it, for `track status` and
//! `regressions`: the tracks, the workers, the jobs waiting or taken,
//! the regressions and their reports (without their text), and the
//! seconds the jobs done lately took.

use super::tracker::is_listed;
use crate::exit;
use crate::views::lab::{LAB_SCHEMA, LabStatus, ReportState};
use archive::Archive;
use archive::lab::{JobFilter, JobState};

/// Jobs done whose times make the seconds a job takes.
const RECENT_JOBS: usize = 50;

/// The lab of `archive`; the dismissed suspicions too with `all`.
pub fn read(archive: &Archive, all: bool) -> exit::Result<LabStatus> {
    let now_us = archive.clock_us()?;
    let open = archive.jobs(&JobFilter {
        owner: None,
        states: vec![JobState::Queued, JobState::Leased],
    })?;
    let done = archive.jobs(&JobFilter {
        owner: None,
        states: vec![JobState::Done],
    })?;
    let times: Vec<f64> = done
        .iter()
        .rev()
        .take(RECENT_JOBS)
        .filter_map(|job| Some((job.finished_us? - job.leased_us?) as f64 / 1e6))
        .collect();
    let seconds_per_job =
        (!times.is_empty()).then(|| times.iter().sum::<f64>() / times.len() as f64);
    let regressions = archive
        .regressions(None)?
        .into_iter()
        .filter(|regression| all || is_listed(regression.state))
        .collect();
    Ok(LabStatus {
        schema: LAB_SCHEMA,
        now_us,
        tracks: archive.tracks()?,
        workers: archive.workers()?,
        jobs: open,
        regressions,
        notifications: archive
            .notifications()?
            .iter()
            .map(ReportState::of)
            .collect(),
        seconds_per_job,
    })
}
