//! The report of a bisection, as `bisect report` and `bisect run` print
//! it and as `track` hands it to its notification command: the
//! `bisect-report` template over bisect's report or refusal, the test and
//! environment of the ends (from their archived runs) and the commands
//! that reproduce the bisection.

use super::SessionSpec;
use super::measuring::KernelSession;
use crate::exit;
use crate::render::Renderer;
use crate::views::bisect_report::ReportContext;
use archive::{Archive, RunQuery};
use bisect::decision::DecisionConfig;
use bisect::report::Outcome;
use run_record::record::RunRecord;
use std::path::Path;

/// The text of the end of the bisection of `spec` (the template of
/// `template_dir`, else the built-in one); the spec and the environment
/// shown come from runs under `config_key`, so that runs of another test
/// archived for the same commits never name the report.
pub fn report_text(
    template_dir: Option<&Path>,
    archive: &Archive,
    spec: &SessionSpec,
    config_key: Option<&str>,
    outcome: &Outcome,
) -> exit::Result<String> {
    let good = first_record(archive, &spec.good, config_key);
    let bad = first_record(archive, &spec.bad, config_key).or_else(|| {
        good.as_ref()
            .and_then(|good| record_like(archive, &spec.bad, good))
    });
    let context = ReportContext::new(
        outcome,
        [good.as_ref(), bad.as_ref()],
        [&spec.good_rev, &spec.bad_rev],
        reproduce(spec),
    );
    exit::Context::context(
        Renderer::new(template_dir).render("bisect-report", &context),
        "failed to render the report",
    )
}

fn quote(text: &str) -> String {
    shlex::try_quote(text).map_or_else(|_| format!("'{text}'"), |quoted| quoted.into_owned())
}

/// Widest line of a reproduce command, before the indent of the report.
const SHELL_WIDTH: usize = 70;

/// Lays `items` (options with their quoted values) out as shell lines of
/// at most `SHELL_WIDTH` columns where the words allow, continued with a
/// backslash. A quoted value too long for a line is cut only between its
/// own words ([`value_words`]), never inside a quoted part of it
/// (`CC="ccache gcc"` stays whole), into pieces in the same quotes that
/// the shell joins again: `'make -j8 '\` then `'bzImage'` at the start
/// of the next line is `make -j8 bzImage`.
fn shell_lines(items: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for item in items {
        let indent = if lines.is_empty() && line.is_empty() {
            ""
        } else {
            "  "
        };
        if !line.is_empty() && line.len() + 1 + item.len() + 2 <= SHELL_WIDTH {
            line.push(' ');
            line.push_str(item);
            continue;
        }
        if !line.is_empty() {
            lines.push(format!("{line} \\"));
        }
        line = format!("{indent}{item}");
        if line.len() + 2 > SHELL_WIDTH
            && let Some(at) = [line.find(" '"), line.find(" \"")]
                .into_iter()
                .flatten()
                .min()
        {
            let head = line[..at].to_string();
            let value = line[at + 1..].to_string();
            let mut words = value_words(&value).into_iter();
            let (mut piece, mut quote) = words.next().unwrap_or_default();
            let mut prefix = format!("{head} ");
            for (word, word_quote) in words {
                // Room for the prefix, the closing quote and the backslash.
                if prefix.len() + piece.len() + word.len() + 2 > SHELL_WIDTH {
                    let close = quote.map_or(String::new(), String::from);
                    lines.push(format!("{prefix}{piece}{close}\\"));
                    prefix = String::new();
                    piece = quote.map_or(word.clone(), |quote| format!("{quote}{word}"));
                } else {
                    piece.push_str(&word);
                }
                quote = word_quote;
            }
            line = format!("{prefix}{piece}");
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The words of a quoted shell value (as shlex quotes it: `'make -j8'`,
/// `"'/bin/x' -S \"$(cat size)\""'$x'`), each with the spaces after it and
/// the quote the shell is in at its end, where the value may be closed and
/// opened again. A word ends only at a space inside the value's quotes: a
/// part of the command in quotes of its own (`"ccache gcc"` in single
/// quotes, `\"$(cat size)\"` or `'a b'` in double quotes, or a part the
/// quoting left the quotes for) is kept within its word, an escape with
/// the character it escapes. Joined, the words are the value.
fn value_words(value: &str) -> Vec<(String, Option<char>)> {
    let mut state: Option<char> = None;
    // A quote of the command's own, inside the value's quotes.
    let mut own: Option<char> = None;
    let mut words: Vec<(String, Option<char>)> = Vec::new();
    let mut word = String::new();
    let mut chars = value.chars().peekable();
    while let Some(c) = chars.next() {
        word.push(c);
        match (state, c) {
            (Some('"') | None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    if state == Some('"') && next == '"' {
                        own = if own == Some('"') {
                            None
                        } else {
                            own.or(Some('"'))
                        };
                    }
                }
            }
            (Some(quote), c) if c == quote => state = None,
            (None, '\'' | '"') => state = Some(c),
            (Some(_), '\'' | '"') => {
                own = if own == Some(c) {
                    None
                } else {
                    own.or(Some(c))
                };
            }
            (Some(_), ' ') if own.is_none() => {
                while chars.peek() == Some(&' ') {
                    word.push(' ');
                    chars.next();
                }
                words.push((std::mem::take(&mut word), state));
            }
            _ => {}
        }
    }
    if !word.is_empty() {
        words.push((word, state));
    }
    words
}

fn reproduce(spec: &SessionSpec) -> Vec<String> {
    let mut words = vec![
        "netbisect bisect start".to_string(),
        format!("--repo {}", quote(&spec.repo)),
        format!("--good {}", quote(&spec.good_rev)),
        format!("--bad {}", quote(&spec.bad_rev)),
    ];
    if let Some(build) = &spec.build {
        words.push(format!("--build {}", quote(build)));
    }
    if let Some(bench) = &spec.bench {
        words.push(format!("--bench {}", quote(bench)));
    }
    if let Some(measure) = &spec.measure {
        words.push(format!("--measure {}", quote(measure)));
    }
    if let Some(kernel) = &spec.kernel {
        words.extend(kernel_words(kernel));
    }
    words.push(format!("--metric {}", spec.config.metric));
    let decision = &spec.config.decision;
    let defaults = DecisionConfig::default();
    if decision.min_effect_pct != defaults.min_effect_pct {
        words.push(format!("--min-effect {}", decision.min_effect_pct));
    }
    if decision.max_repeats != defaults.max_repeats {
        words.push(format!("--max-repeats {}", decision.max_repeats));
    }
    if decision.min_end_repeats != defaults.min_end_repeats {
        words.push(format!("--end-repeats {}", decision.min_end_repeats));
    }
    if decision.confirm_repeats != defaults.confirm_repeats {
        words.push(format!("--confirm-repeats {}", decision.confirm_repeats));
    }
    if let Some(timeout) = spec.timeout_s {
        words.push(format!("--timeout {timeout}"));
    }
    if spec.first_parent {
        words.push("--first-parent".to_string());
    }
    let mut lines = shell_lines(&words);
    lines.push("netbisect bisect run".to_string());
    lines
}

/// The `--kernel` and `--vm-*` words of a session.
fn kernel_words(kernel: &KernelSession) -> Vec<String> {
    let options = &kernel.options;
    let defaults = crate::vm::VmOptions::default();
    let mut words = vec![format!("--kernel {}", quote(&kernel.image))];
    if options.net != defaults.net {
        words.push(format!("--vm-net {}", options.net.name()));
    }
    if options.cpus != defaults.cpus {
        words.push(format!("--vm-cpus {}", options.cpus));
    }
    if options.memory_mib != defaults.memory_mib {
        words.push(format!("--vm-memory {}M", options.memory_mib));
    }
    for append in &options.append {
        words.push(format!("--vm-append {}", quote(append)));
    }
    for (key, value) in &options.sysctls {
        words.push(format!("--vm-sysctl {}", quote(&format!("{key}={value}"))));
    }
    if let Some(settings) = &kernel.settings {
        words.push(format!("--vm-settings {}", quote(settings)));
    }
    if let Some(tap) = &options.tap {
        words.push(format!("--vm-tap {}", quote(tap)));
    }
    if options.timeout_s != defaults.timeout_s {
        words.push(format!("--vm-timeout {}", options.timeout_s));
    }
    for share in &options.shares {
        words.push(format!("--vm-share {}", quote(&share.to_string_lossy())));
    }
    match options.accel {
        crate::vm::AccelChoice::Auto => {}
        crate::vm::AccelChoice::Kvm => words.push("--vm-accel kvm".to_string()),
        crate::vm::AccelChoice::Tcg => words.push("--vm-accel tcg".to_string()),
    }
    words
}

/// The first archived run of `commit` under `config_key` when given.
fn first_record(archive: &Archive, commit: &str, config_key: Option<&str>) -> Option<RunRecord> {
    let query = RunQuery {
        commit_prefix: Some(commit.to_string()),
        config_key_prefix: config_key.map(str::to_string),
        limit: Some(1),
        ..RunQuery::default()
    };
    archive.records(&query).ok()?.into_iter().next()
}

/// The first archived run of `commit` with the spec of `like`: the bad
/// end may differ from the good one in its environment (a guest setting
/// of the kernel measured), never in the test.
fn record_like(archive: &Archive, commit: &str, like: &RunRecord) -> Option<RunRecord> {
    let query = RunQuery {
        commit_prefix: Some(commit.to_string()),
        ..RunQuery::default()
    };
    archive
        .records(&query)
        .ok()?
        .into_iter()
        .find(|record| record.spec == like.spec && record.testbed == like.testbed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_values_are_cut_between_their_words_where_the_shell_joins_them() {
        let build = "make olddefconfig && make -j8 CC=\"ccache gcc\" KCFLAGS=\"-O2 -g\" \
                     bzImage modules && cp arch/x86/boot/bzImage /srv/kernels/under-test";
        let items = vec![
            "netbisect bisect start".to_string(),
            "--good v1".to_string(),
            format!("--build {}", quote(build)),
            "--bad v2".to_string(),
        ];
        let lines = shell_lines(&items);
        assert!(
            lines.iter().all(|line| line.len() <= SHELL_WIDTH),
            "{lines:#?}"
        );
        for line in &lines {
            assert!(
                !line.contains("\"ccache'") && !line.contains("\"-O2'"),
                "{lines:#?}"
            );
        }
        // What sh reads: continuations removed, then words split.
        let joined = lines.join("\n").replace("\\\n", "");
        let words = shlex::split(&joined).unwrap();
        assert_eq!(words[6], build);
        assert_eq!(words.last().unwrap(), "v2");

        // A value with single quotes of its own is double-quoted, and its
        // `$` kept from the shell in single quotes again.
        let measure = "'/usr/local/lib/netbisect/bin/netbisect' bench -t TCP_STREAM -l 0.1 \
                       -S \"$(cat out/socket_size)\" --json --no-archive \
                       --commit \"$NETBISECT_COMMIT\"";
        let items = vec![
            "netbisect bisect start".to_string(),
            format!("--measure {}", quote(measure)),
        ];
        let lines = shell_lines(&items);
        assert!(
            lines.iter().all(|line| line.len() <= SHELL_WIDTH),
            "{lines:#?}"
        );
        let joined = lines.join("\n").replace("\\\n", "");
        let words = shlex::split(&joined).unwrap();
        assert_eq!(words[4], measure, "{lines:#?}");
    }
}
