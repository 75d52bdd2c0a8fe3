//! Merging another archive into this one, from either backend into
//! either: every run it lacks, each checked as it is read, the runs the
//! check or this archive refuse named with the reason, the rest added.

use super::write::StoreCounts;
use super::{Archive, CanonicalRun, MergeCounts, RefusedRun, RunQuery};
use crate::ArchiveError;
use crate::location::Location;
use std::path::Path;
use std::sync::Arc;

/// Runs per transaction of a merge that is not between two files.
pub const MERGE_BATCH: usize = 1000;

impl Archive {
    /// Copies into this archive every run of the archive file at `other`
    /// that it lacks. Each copied run is verified first. Merging the same
    /// archive again adds nothing. Between two files this is one
    /// transaction; see [`Archive::merge`] otherwise.
    pub fn merge_from(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        self.merge(&Location::File(other.to_path_buf()))
    }

    /// Copies into this archive every run of the archive at `other` that
    /// it lacks, from either backend into either. Each run is checked
    /// first, as any record read is: one the check refuses (damaged, or
    /// beyond a limit it holds records to) is left out and named in
    /// [`MergeCounts::refused`], and so is one this archive refuses to
    /// store; the others are merged. A file that is not there is
    /// [`ArchiveError::NoArchive`], as for a read.
    ///
    /// Between two SQLite files this is one transaction; otherwise the
    /// runs are read as a stream and stored [`MERGE_BATCH`] at a time,
    /// each batch one transaction, so that a merge cut short keeps whole
    /// batches and a second merge completes it. Merging the same archive
    /// again adds nothing.
    pub fn merge(&mut self, other: &Location) -> Result<MergeCounts, ArchiveError> {
        other.check_exists()?;
        if let Location::File(path) = other
            && let Some(merged) = self.backend.merge_file(path)
        {
            return merged;
        }
        let mut source = Archive::open_location_read_only(other)?;
        if let Some(report) = &self.lock_waits {
            source.report_lock_waits(Arc::clone(report));
        }
        let mut counts = MergeCounts::default();
        let mut batch = Vec::with_capacity(MERGE_BATCH);
        source.for_each_record(&RunQuery::default(), |run, bytes| {
            counts.examined += 1;
            match CanonicalRun::copied(&run.id, bytes) {
                Ok(copied) => batch.push(copied),
                Err(refused) => counts.refused.push(refused),
            }
            if batch.len() == MERGE_BATCH {
                self.store_merged(&mut batch, &mut counts)?;
            }
            Ok::<(), ArchiveError>(())
        })?;
        self.store_merged(&mut batch, &mut counts)?;
        Ok(counts)
    }

    /// Stores `batch`, part of a merge, in one transaction and empties
    /// it. When this archive refuses a value of one of its runs (a limit
    /// of the database the record check does not hold records to), each
    /// run is stored in a transaction of its own instead, and those
    /// refused are counted as such.
    fn store_merged(
        &mut self,
        batch: &mut Vec<CanonicalRun>,
        counts: &mut MergeCounts,
    ) -> Result<(), ArchiveError> {
        let mut add = |stored: StoreCounts| {
            counts.added += stored.added;
            counts.already_present += stored.already_present;
        };
        match self.store_all(batch) {
            Ok(stored) => add(stored),
            Err(err) if err.refuses_a_value() => {
                let mut refused = Vec::new();
                for run in batch.iter() {
                    match self.store_all(std::slice::from_ref(run)) {
                        Ok(stored) => add(stored),
                        Err(err) if err.refuses_a_value() => refused.push(RefusedRun {
                            id: run.record().id.clone(),
                            reason: err.to_string(),
                        }),
                        Err(err) => return Err(err),
                    }
                }
                counts.refused.extend(refused);
            }
            Err(err) => return Err(err),
        }
        batch.clear();
        Ok(())
    }
}
