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
use bisect::decision::{DecisionConfig, FutilityAlternative, Method as WalkMethod};
use bisect::report::Outcome;
use run_record::record::{Direction, RunRecord};
use run_record::shell::CommandLine;
use std::path::Path;

/// What a bisection cost in time, read from its journal: the jobs it ran
/// at once, its rounds and its wall-clock. A report of several jobs says
/// them, and its reproduce line keeps `--jobs`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    /// Measurements run at once (`bisect run --jobs`).
    pub jobs: u32,
    /// The rounds: the wall-clock in units of one measurement, as if
    /// every measurement took as long.
    pub rounds: u32,
    /// Seconds of wall-clock from the first event of the journal to the
    /// last, less the pauses after an interruption; `None` when the
    /// archive's times cannot be read.
    pub wall_s: Option<f64>,
}

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
    timing: Option<Timing>,
) -> exit::Result<String> {
    let good = first_record(archive, &spec.good, config_key);
    let bad = first_record(archive, &spec.bad, config_key).or_else(|| {
        good.as_ref()
            .and_then(|good| record_like(archive, &spec.bad, good))
    });
    let jobs = timing.map_or(1, |timing| timing.jobs);
    let mut context = ReportContext::new(
        outcome,
        [good.as_ref(), bad.as_ref()],
        [&spec.good_rev, &spec.bad_rev],
        reproduce(spec, jobs),
    );
    if let Some(timing) = timing {
        context = context.with_timing(timing.jobs, timing.rounds, timing.wall_s);
    }
    exit::Context::context(
        Renderer::new(template_dir).render("bisect-report", &context),
        "failed to render the report",
    )
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

/// The commands that run the bisection again as shell lines: `bisect
/// start` with every option that shapes it, then `bisect run` with the
/// jobs it was measured with (`jobs`, from its journal; 1 for one at a
/// time).
fn reproduce(spec: &SessionSpec, jobs: u32) -> Vec<String> {
    let mut start = CommandLine::new(&["netbisect", "bisect", "start"]);
    start
        .option("--repo", spec.repo.clone())
        .option("--good", spec.good_rev.clone())
        .option("--bad", spec.bad_rev.clone());
    if let Some(build) = &spec.build {
        start.option("--build", build.clone());
    }
    if let Some(bench) = &spec.bench {
        start.option("--bench", bench.clone());
    }
    if let Some(measure) = &spec.measure {
        start.option("--measure", measure.clone());
    }
    if let Some(kernel) = &spec.kernel {
        add_kernel(&mut start, kernel);
    }
    start.option("--metric", spec.config.metric.clone());
    let metric_direction = spec
        .config
        .metric
        .parse::<run_record::record::Metric>()
        .ok()
        .map(|metric| metric.direction());
    if metric_direction != Some(spec.config.direction) {
        start.option(
            "--direction",
            match spec.config.direction {
                Direction::HigherIsBetter => "higher",
                Direction::LowerIsBetter => "lower",
            },
        );
    }
    let decision = &spec.config.decision;
    let defaults = DecisionConfig::default();
    // A minimum effect given is a promise the ends' test keeps (see
    // bisect's `ends` module), whatever its value.
    if decision.futility_alternative == FutilityAlternative::MinEffect
        || decision.min_effect_pct != defaults.min_effect_pct
    {
        start.option("--min-effect", decision.min_effect_pct.to_string());
    }
    if decision.max_repeats != defaults.max_repeats {
        start.option("--max-repeats", decision.max_repeats.to_string());
    }
    if decision.min_end_repeats != defaults.min_end_repeats {
        start.option("--end-repeats", decision.min_end_repeats.to_string());
    }
    if decision.confirm_repeats != defaults.confirm_repeats {
        start.option("--confirm-repeats", decision.confirm_repeats.to_string());
    }
    if decision.method != defaults.method {
        start.option(
            "--method",
            match decision.method {
                WalkMethod::Posterior => "posterior",
                WalkMethod::Sequential => "sequential",
            },
        );
    }
    if let Some(timeout) = spec.timeout_s {
        start.option("--timeout", timeout.to_string());
    }
    if spec.first_parent {
        start.word("--first-parent");
    }
    let mut lines = shell_lines(&start.rendered_units());
    let mut run = CommandLine::new(&["netbisect", "bisect", "run"]);
    // The jobs are chosen at `run` and kept in the journal: a bisection
    // of several asks for as many again.
    if jobs > 1 {
        run.option("--jobs", jobs.to_string());
    }
    lines.push(run.render());
    lines
}

/// Adds the `--kernel` and `--vm-*` options of a session.
fn add_kernel(command: &mut CommandLine, kernel: &KernelSession) {
    let options = &kernel.options;
    let defaults = crate::vm::VmOptions::default();
    command.option("--kernel", kernel.image.clone());
    if options.net != defaults.net {
        command.option("--vm-net", options.net.name());
    }
    if options.cpus != defaults.cpus {
        command.option("--vm-cpus", options.cpus.to_string());
    }
    if options.memory_mib != defaults.memory_mib {
        command.option("--vm-memory", format!("{}M", options.memory_mib));
    }
    for append in &options.append {
        command.option("--vm-append", append.clone());
    }
    for (key, value) in &options.sysctls {
        command.option("--vm-sysctl", format!("{key}={value}"));
    }
    if let Some(settings) = &kernel.settings {
        command.option("--vm-settings", settings.clone());
    }
    if let Some(tap) = &options.tap {
        command.option("--vm-tap", tap.clone());
    }
    if options.timeout_s != defaults.timeout_s {
        command.option("--vm-timeout", options.timeout_s.to_string());
    }
    for share in &options.shares {
        command.option("--vm-share", share.to_string_lossy());
    }
    match options.accel {
        crate::vm::AccelChoice::Auto => {}
        crate::vm::AccelChoice::Kvm => {
            command.option("--vm-accel", "kvm");
        }
        crate::vm::AccelChoice::Tcg => {
            command.option("--vm-accel", "tcg");
        }
    }
    if options.vhost {
        command.word("--vm-vhost");
    }
    if let Some(size) = options.tx_queue_size {
        command.option("--vm-tx-queue-size", size.to_string());
    }
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
    use run_record::shell::quote;

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
