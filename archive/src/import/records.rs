//! Canonical run records as input: one JSON document (any formatting) or
//! JSON lines, read one document at a time ([`super::input::Documents`]),
//! each validated and kept verbatim in canonical form, a few documents
//! at a time on every core.

use super::input::{Document, Documents, ReadError, Start};
use super::{ImportError, MAX_RUNS_PER_INPUT};
use crate::store::CanonicalRun;
use run_record::record::RecordError;
use std::io::BufRead;

/// The members of a JSON document's top level that tell its format;
/// every other member is skipped without being built.
#[derive(serde::Deserialize)]
pub(super) struct TopLevel {
    /// A run record's `schema`.
    #[serde(default)]
    pub schema: Option<serde::de::IgnoredAny>,
    /// iperf3's `start`.
    #[serde(default)]
    pub start: Option<serde::de::IgnoredAny>,
    /// iperf3's `end`.
    #[serde(default)]
    pub end: Option<serde::de::IgnoredAny>,
}

impl TopLevel {
    /// The top-level members of `document`, read without building a
    /// tree, which takes several times the text's size.
    pub(super) fn of(document: &Document) -> Result<TopLevel, ImportError> {
        serde_json::from_slice(&document.bytes).map_err(|err| {
            ImportError::parse(document.line + err.line().max(1) - 1, json_message(&err))
        })
    }
}

fn json_message(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let message = match message.rfind(" at line ") {
        Some(cut) => message[..cut].to_string(),
        None => message,
    };
    format!("malformed JSON: {message}")
}

/// Documents validated together, on every core: at most this many ...
const CHUNK_DOCUMENTS: usize = 256;
/// ... and at most this many bytes of them, so that what is being
/// validated at once stays within tens of MiB.
const CHUNK_BYTES: usize = 8 << 20;

/// Reads every document of `documents` (the first already read, and
/// given) as a run record, in order, handing each to `take`; refuses the
/// input at the first document that is not a valid record, and at the
/// one past [`MAX_RUNS_PER_INPUT`].
pub(super) fn each_record<E: From<ImportError> + From<ReadError>>(
    first: Document,
    documents: &mut Documents<'_>,
    take: &mut dyn FnMut(CanonicalRun) -> Result<(), E>,
) -> Result<usize, E> {
    let mut n_documents = 0_usize;
    let mut chunk = vec![first];
    let mut chunk_bytes = chunk[0].bytes.len();
    loop {
        let next = documents.next_document()?;
        let at_end = next.is_none();
        if let Some(document) = next {
            n_documents += 1;
            if n_documents + 1 > MAX_RUNS_PER_INPUT {
                return Err(ImportError::TooManyRuns {
                    count: n_documents + 1,
                    line: Some(document.line),
                }
                .into());
            }
            chunk_bytes += document.bytes.len();
            chunk.push(document);
        }
        if at_end || chunk.len() >= CHUNK_DOCUMENTS || chunk_bytes >= CHUNK_BYTES {
            for run in validate(std::mem::take(&mut chunk)) {
                take(run?)?;
            }
            chunk_bytes = 0;
        }
        if at_end {
            return Ok(n_documents + 1);
        }
    }
}

/// Counts the documents of an input whose first character `start` read,
/// refusing it past [`MAX_RUNS_PER_INPUT`] with their number, or at a
/// document or line past its ceiling: what can be told of an input
/// before any of it is read as records.
pub(super) fn check_documents(reader: &mut dyn BufRead, start: &Start) -> Result<(), ReadError> {
    let mut documents = Documents::new(reader, start, false);
    let mut n_documents = 0_usize;
    while documents.next_document()?.is_some() {
        n_documents += 1;
    }
    if n_documents > MAX_RUNS_PER_INPUT {
        return Err(ImportError::TooManyRuns {
            count: n_documents,
            line: None,
        }
        .into());
    }
    Ok(())
}

/// The runs of `chunk`, in order, each validated (on every core when
/// there are several).
fn validate(chunk: Vec<Document>) -> Vec<Result<CanonicalRun, ImportError>> {
    let n_threads = std::thread::available_parallelism().map_or(1, usize::from);
    if n_threads < 2 || chunk.len() < 2 {
        return chunk.iter().map(validate_one).collect();
    }
    let part_len = chunk.len().div_ceil(n_threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunk
            .chunks(part_len)
            .map(|part| scope.spawn(move || part.iter().map(validate_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    vec![Err(ImportError::parse(
                        1,
                        "record validation failed unexpectedly",
                    ))]
                })
            })
            .collect()
    })
}

/// One document read as a run record; a document that is not JSON is
/// named at the line where it breaks, any other fault at its first line.
fn validate_one(document: &Document) -> Result<CanonicalRun, ImportError> {
    CanonicalRun::from_json(&document.bytes).map_err(|err| match err {
        RecordError::Malformed { line, message, .. } => ImportError::parse(
            document.line + line.max(1) - 1,
            format!("malformed JSON: {message}"),
        ),
        RecordError::Truncated { line, .. } => ImportError::parse(
            document.line + line.max(1) - 1,
            "malformed JSON: the input ends inside a document",
        ),
        other => ImportError::parse(document.line, format!("invalid run record: {other}")),
    })
}
