//! An input read as a stream and its runs handed on as they are read
//! ([`import_into`]: into an archive, [`IMPORT_BATCH_RUNS`] runs or
//! [`IMPORT_BATCH_BYTES`] of records a transaction), so that what an
//! import holds in memory is one batch, whatever the input's length.
//!
//! What is refused, and what is stored by then:
//!
//! - a text (netperf, uperf, iperf3, a mail) is read whole within its
//!   ceilings and parsed through once before any of its runs is stored:
//!   a text refused anywhere leaves nothing;
//! - JSON documents from a file have their ceilings (documents, lines,
//!   runs) checked over the whole file first, then are read as records
//!   and stored batch by batch; from a stream (stdin), which is read
//!   once, every ceiling is checked as it is reached;
//! - a record that does not validate, or a batch the archive does not
//!   take, stops the import there: the batches stored before it stay
//!   (each was one transaction), and the failure says how many runs they
//!   hold. An input of one batch is stored whole or not at all; importing
//!   an input again adds what is missing, since a run's id is its
//!   content's.

use super::input::{Documents, ReadError, Start, read_text};
use super::records::{TopLevel, check_documents, each_record};
use super::{Format, ImportError, ImportOptions, parse_text};
use crate::ArchiveError;
use crate::store::{Archive, CanonicalRun, StoreCounts};
use std::io::{BufRead, BufReader, Read, Seek};

/// The most runs stored in one transaction of an import.
pub const IMPORT_BATCH_RUNS: usize = 10_000;

/// The most bytes of records (canonical) stored in one transaction of
/// an import.
pub const IMPORT_BATCH_BYTES: usize = 32 << 20;

/// Where the runs of an input go, one at a time, as they are read.
pub(crate) trait RunSink {
    /// Takes one run.
    fn take(&mut self, run: CanonicalRun) -> Result<(), ArchiveError>;

    /// Whether what it took is kept before the input's end (an archive,
    /// batch by batch): then a text is parsed through once first, so
    /// that a text refused anywhere leaves nothing.
    fn keeps_as_it_goes(&self) -> bool;
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportFailure {
    /// The input could not be read, or was refused.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The archive did not take a batch.
    #[error(transparent)]
    Store(#[from] ArchiveError),
}

impl From<ImportError> for ImportFailure {
    fn from(err: ImportError) -> ImportFailure {
        ImportFailure::Read(ReadError::Input(err))
    }
}

/// An input of [`import_into`].
pub enum Input<'a> {
    /// A file: a regular file's JSON documents are counted over the
    /// whole file before any is read as a record.
    File(&'a mut std::fs::File),
    /// A stream (stdin), read once.
    Stream(&'a mut dyn Read),
}

/// What an import found and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportReport {
    /// The format detected.
    pub format: Format,
    /// Runs in the input.
    pub runs: usize,
    /// What storing them did.
    pub counts: StoreCounts,
}

/// An import that stopped, and what it had stored by then.
#[derive(Debug, thiserror::Error)]
#[error("{failure}")]
pub struct ImportStopped {
    /// Why it stopped.
    #[source]
    pub failure: ImportFailure,
    /// What the batches stored before it stopped hold.
    pub stored: StoreCounts,
}

/// The runs of an input stored in batches, each one transaction.
struct Batches<'a> {
    archive: &'a mut Archive,
    batch: Vec<CanonicalRun>,
    batch_bytes: usize,
    stored: StoreCounts,
}

impl Batches<'_> {
    fn store(&mut self) -> Result<(), ArchiveError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let counts = self.archive.store_all(&self.batch)?;
        self.stored.added += counts.added;
        self.stored.already_present += counts.already_present;
        self.batch.clear();
        self.batch_bytes = 0;
        Ok(())
    }
}

impl RunSink for Batches<'_> {
    fn take(&mut self, run: CanonicalRun) -> Result<(), ArchiveError> {
        self.batch_bytes += run.bytes().len();
        self.batch.push(run);
        if self.batch.len() >= IMPORT_BATCH_RUNS || self.batch_bytes >= IMPORT_BATCH_BYTES {
            self.store()?;
        }
        Ok(())
    }

    fn keeps_as_it_goes(&self) -> bool {
        true
    }
}

/// Imports `input` into `archive` as it is read; see the module
/// documentation for what is stored when it stops.
pub fn import_into(
    archive: &mut Archive,
    input: Input<'_>,
    options: &ImportOptions,
) -> Result<ImportReport, ImportStopped> {
    let mut batches = Batches {
        archive,
        batch: Vec::new(),
        batch_bytes: 0,
        stored: StoreCounts::default(),
    };
    let imported = match input {
        Input::File(file) => import_file(file, options, &mut batches),
        Input::Stream(stream) => import_stream(&mut BufReader::new(stream), options, &mut batches),
    }
    .and_then(|imported| {
        batches.store()?;
        Ok(imported)
    });
    match imported {
        Ok((format, runs)) => Ok(ImportReport {
            format,
            runs,
            counts: batches.stored,
        }),
        Err(failure) => Err(ImportStopped {
            failure,
            stored: batches.stored,
        }),
    }
}

/// A file: its JSON documents' ceilings checked over the whole file
/// first when it can be read again (a regular file), then its runs.
fn import_file(
    file: &mut std::fs::File,
    options: &ImportOptions,
    sink: &mut dyn RunSink,
) -> Result<(Format, usize), ImportFailure> {
    let regular = file.metadata().map_err(ReadError::from)?.is_file();
    if regular {
        let mut reader = BufReader::new(&mut *file);
        let start = Start::read(&mut reader)?;
        if start.first == Some(b'{') {
            check_documents(&mut reader, &start)?;
        }
        drop(reader);
        file.rewind().map_err(ReadError::from)?;
    }
    import_stream(&mut BufReader::new(file), options, sink)
}

/// Reads `reader` (a whole input) and hands each of its runs to `sink`;
/// the format and the number of runs.
pub(crate) fn import_stream(
    reader: &mut dyn BufRead,
    options: &ImportOptions,
    sink: &mut dyn RunSink,
) -> Result<(Format, usize), ImportFailure> {
    let start = Start::read(reader)?;
    match start.first {
        None => Err(ImportError::Empty.into()),
        Some(b'{') => {
            let mut documents = Documents::new(reader, &start, true);
            let Some(first) = documents.next_document()? else {
                return Err(ImportError::Empty.into());
            };
            let top = TopLevel::of(&first)?;
            if top.schema.is_some() {
                let n_runs = each_record(first, &mut documents, &mut |run| {
                    sink.take(run).map_err(ImportFailure::from)
                })?;
                return Ok((Format::RunRecords, n_runs));
            }
            if top.start.is_none() || top.end.is_none() {
                let text = String::from_utf8_lossy(&first.bytes);
                let first_line = text.lines().next().unwrap_or_default();
                return Err(ImportError::unrecognised(first.line, first_line).into());
            }
            let text = read_text(reader, start, &first.bytes)?;
            import_text(&text, options, sink)
        }
        Some(_) => {
            let text = read_text(reader, start, b"")?;
            import_text(&text, options, sink)
        }
    }
}

/// The runs of a text, handed to `sink`; parsed through once first when
/// `sink` keeps what it takes as it goes.
fn import_text(
    text: &str,
    options: &ImportOptions,
    sink: &mut dyn RunSink,
) -> Result<(Format, usize), ImportFailure> {
    if sink.keeps_as_it_goes() {
        parse_text(text, options, &mut |_| Ok(()))?;
    }
    // A text parsed through already refuses nothing the second time, so
    // a failure to store is kept and returned once the parse is done.
    let mut stored = Ok(());
    let parsed = parse_text(text, options, &mut |run| {
        if stored.is_ok() {
            stored = sink.take(run);
        }
        Ok(())
    })?;
    stored?;
    Ok(parsed)
}
