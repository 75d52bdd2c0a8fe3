//! Canonical run records as input: one JSON document (any formatting) or
//! JSON lines, each validated and kept verbatim in canonical form.

use super::{ImportError, MAX_DOCUMENT_BYTES};
use crate::store::CanonicalRun;

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

/// The top-level members of the first JSON document of `text`, for
/// detecting the format: read without building a tree, which takes
/// several times the text's size.
pub(super) fn first_value(text: &str) -> Result<TopLevel, ImportError> {
    let mut measure = serde_json::Deserializer::from_str(text).into_iter::<serde::de::IgnoredAny>();
    if let Some(Ok(_)) = measure.next()
        && measure.byte_offset() > MAX_DOCUMENT_BYTES
    {
        let leading = text.len() - text.trim_start().len();
        let line = 1 + text[..leading].matches('\n').count();
        return Err(ImportError::DocumentTooLarge { line });
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<TopLevel>();
    match stream.next() {
        Some(Ok(value)) => Ok(value),
        Some(Err(err)) => Err(ImportError::parse(err.line(), json_message(&err))),
        None => Err(ImportError::Empty),
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

/// Every record of `input`, in order.
pub(super) fn parse(input: &[u8]) -> Result<Vec<CanonicalRun>, ImportError> {
    // First find where each document starts and ends, cheaply; then
    // validate the documents, on every core when there are many.
    let mut spans = Vec::new();
    let mut n_documents = 0_usize;
    let mut stream =
        serde_json::Deserializer::from_slice(input).into_iter::<serde::de::IgnoredAny>();
    let mut start = 0;
    let mut line = 1;
    loop {
        match stream.next() {
            None => break,
            Some(Ok(_)) => {
                let end = stream.byte_offset();
                let document = &input[start..end];
                let leading = document.len() - document.trim_ascii_start().len();
                line += count_newlines(&document[..leading]);
                if document.len() - leading > MAX_DOCUMENT_BYTES {
                    return Err(ImportError::DocumentTooLarge { line });
                }
                // Past the ceiling the documents are only counted, so
                // that the refusal names their number.
                n_documents += 1;
                if n_documents <= super::MAX_RUNS_PER_INPUT {
                    spans.push((line, start + leading, end));
                }
                line += count_newlines(&document[leading..]);
                start = end;
            }
            Some(Err(err)) => {
                return Err(ImportError::parse(err.line(), json_message(&err)));
            }
        }
    }
    if n_documents > super::MAX_RUNS_PER_INPUT {
        return Err(ImportError::TooManyRuns {
            count: n_documents,
            line: None,
        });
    }
    let validate = |(line, start, end): &(usize, usize, usize)| {
        CanonicalRun::from_json(&input[*start..*end])
            .map_err(|err| ImportError::parse(*line, format!("invalid run record: {err}")))
    };
    let n_threads = std::thread::available_parallelism().map_or(1, usize::from);
    if n_threads < 2 || spans.len() < 64 {
        return spans.iter().map(validate).collect();
    }
    let chunk_len = spans.len().div_ceil(n_threads);
    let results: Vec<Result<Vec<CanonicalRun>, ImportError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = spans
            .chunks(chunk_len)
            .map(|chunk| scope.spawn(move || chunk.iter().map(validate).collect()))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(ImportError::parse(
                        1,
                        "record validation failed unexpectedly",
                    ))
                })
            })
            .collect()
    });
    let mut runs = Vec::with_capacity(spans.len());
    for chunk in results {
        runs.extend(chunk?);
    }
    Ok(runs)
}

fn count_newlines(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&byte| byte == b'\n').count()
}
