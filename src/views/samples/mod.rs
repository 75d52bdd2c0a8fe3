//! The sample contexts every built-in template is shown on, each made
//! from the types a command hands to its template: records built as the
//! tests build them, comparisons and histories computed by the archive,
//! reports and plans as bisect returns them. One module per template,
//! named as it is; each case is representative data, long names or
//! extreme numbers.
//!
//! Every sample is also committed as the JSON its context serialises to,
//! in `tests/data/template-samples/TEMPLATE--CASE.json`: what a user
//! starting a template of their own can read, and what a change of a
//! context shows in review. `render::rules` renders every sample, pins
//! its text with a snapshot and checks that the committed JSON is the
//! sample's; `NETBISECT_UPDATE_SAMPLES=1` rewrites the JSON instead.

mod archive_list;
mod archive_prune;
mod bisect;
mod bisect_report;
mod bisect_status;
mod compare;
mod env;
mod history;
mod lab;
mod plan;
mod run;
mod sweep;

use crate::render::{CONTEXT_VERSION, Renderer};
use serde::Serialize;

/// A context with the version the renderer gives every template beside
/// it, as a template sees it.
#[derive(Serialize)]
struct Versioned<'a, C> {
    context_version: u32,
    #[serde(flatten)]
    context: &'a C,
}

/// One case of one template: its context as JSON and the text the
/// built-in template makes of it.
pub struct Sample {
    /// The template's name.
    pub template: &'static str,
    /// The case's name.
    pub case: String,
    /// The context serialised as the committed file holds it, with the
    /// `context_version` the renderer adds: indented, members in the
    /// order of the types, and a newline.
    pub json: String,
    /// The built-in template rendered over the typed context, or what
    /// failed.
    pub text: Result<String, String>,
}

impl Sample {
    /// The sample of `template` named `case` over `context`, rendered
    /// from the typed value as the command renders it.
    pub fn new(template: &'static str, case: &str, context: &impl Serialize) -> Sample {
        Sample {
            template,
            case: case.to_string(),
            json: serde_json::to_string_pretty(&Versioned {
                context_version: CONTEXT_VERSION,
                context,
            })
            .expect("a context serialises")
                + "\n",
            text: Renderer::new(None)
                .render(template, context)
                .map_err(|err| err.to_string()),
        }
    }

    /// `TEMPLATE--CASE`, the name of its JSON file and its snapshot.
    pub fn name(&self) -> String {
        format!("{}--{}", self.template, self.case)
    }
}

/// Every sample of every template, ordered by template and case.
pub fn all() -> Vec<Sample> {
    let mut samples = Vec::new();
    samples.extend(archive_list::samples());
    samples.extend(archive_prune::samples());
    samples.extend(bisect_report::samples());
    samples.extend(bisect_status::samples());
    samples.extend(compare::samples());
    samples.extend(env::samples());
    samples.extend(history::samples());
    samples.extend(lab::samples());
    samples.extend(plan::samples());
    samples.extend(run::samples());
    samples.extend(sweep::samples());
    samples.sort_by(|a, b| (a.template, &a.case).cmp(&(b.template, &b.case)));
    samples
}
