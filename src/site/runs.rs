//! The page of a chart point's runs: what a click on a point of a
//! configuration's chart opens. Each run of the point with its figures,
//! its environment (the server or VM it ran against, the kernels, the
//! CPU), its settings as the kernel granted them (written as every text
//! output writes them, `gso=on(off)` with the legend), the run as
//! `archive show` prints it, and the `netbisect bench` line that runs it
//! again where and as it ran (`-H`, `--testbed`, `--commit`, the kernel
//! and VM options: [`archive::figures::run_command`]).
//!
//! A point's page is named after its configuration's spec key and the
//! point: its commit in git order, its run in time order, so that a
//! link to it holds from one publish to the next.

use super::IntervalView;
use super::chart::format_value;
use super::series::{PointFigures, Scale};
use crate::comparison::reproduce::measured_in;
use crate::exit::{self, Context};
use crate::global_options::GlobalOptions;
use crate::views::run::RunContext;
use crate::views::units::Units;
use archive::Archive;
use archive::history::SeriesOrder;
use run_record::record::{Metric, RunRecord};
use serde::Serialize;

/// A page of a point's runs.
pub struct PointPage {
    /// File name.
    pub file: String,
    /// The page.
    pub html: String,
}

/// What every point page of one configuration shares.
pub struct ConfigOfPoints<'a> {
    /// The configuration's title, plain text.
    pub title: &'a str,
    /// The file of the configuration's page, linked back to.
    pub config_file: &'a str,
    /// The configuration's spec key.
    pub spec_key: &'a str,
    /// The metric of its chart.
    pub metric: Metric,
    /// How its chart orders its points.
    pub order: SeriesOrder,
    /// The chart's scale.
    pub scale: &'a Scale,
}

/// The file name of `point`'s page, in `config`'s chart.
pub fn point_file(config: &ConfigOfPoints<'_>, point: &PointFigures) -> String {
    let spec = config.spec_key.get(..16).unwrap_or(config.spec_key);
    let of_point = match config.order {
        SeriesOrder::Git => point.label.as_str(),
        SeriesOrder::Time => point.run_ids.first().map_or("", String::as_str),
    };
    let of_point: String = of_point
        .chars()
        .take(12)
        .filter(char::is_ascii_alphanumeric)
        .collect();
    format!("runs-{spec}-{of_point}.html")
}

/// A point's row of a configuration's table, and the figures its page
/// of runs opens with.
#[derive(Serialize)]
pub struct PointRow<'a> {
    label: &'a str,
    subject: Option<&'a str>,
    /// The page of its runs.
    page: Option<&'a str>,
    n_runs: usize,
    n_samples: usize,
    mean: String,
    median: String,
    interval: Option<IntervalView>,
    change: Option<&'a str>,
}

/// The row of `point`, its figures formatted.
pub fn point_row(point: &PointFigures) -> PointRow<'_> {
    PointRow {
        label: &point.label,
        subject: point.subject.as_deref(),
        page: point.page.as_deref(),
        n_runs: point.n_runs,
        n_samples: point.n_samples,
        mean: format_value(point.mean),
        median: format_value(point.median),
        interval: point
            .interval
            .map(|(low, high)| IntervalView::new(low, high)),
        change: point.change.as_deref(),
    }
}

/// The context of `templates/site/runs.html`.
#[derive(Serialize)]
struct PointView<'a> {
    title: &'a str,
    config_file: &'a str,
    metric: &'a str,
    unit: &'a str,
    in_git_order: bool,
    /// The full commit of the point's runs, where they name one.
    commit: Option<&'a str>,
    /// The point's figures, as its row of the configuration's table:
    /// its label (a commit, abbreviated, or its run's time), the
    /// commit's subject, the mean, median, interval and change.
    point: PointRow<'a>,
    runs: Vec<RunView>,
}

/// One run of a point.
#[derive(Serialize)]
struct RunView {
    id: String,
    started_at: String,
    finished_at: String,
    commit: Option<String>,
    /// `git describe` of the commit, where the run kept it.
    describe: Option<String>,
    label: Option<String>,
    testbed: String,
    /// Who stored the run, as the archive keeps it (the database role,
    /// or the user who wrote the file); "unknown" for a run stored before
    /// the archive kept it.
    stored_by: Option<String>,
    /// The iterations' values of the chart's metric, in its unit.
    values: Vec<String>,
    /// Their mean.
    mean: String,
    environment: EnvironmentView,
    /// Each setting asked of the system, as the kernel granted it.
    settings: Vec<String>,
    /// What the text outputs note under a run: the legend of a setting
    /// not granted, what CPU figures of a VM mean.
    notes: Vec<String>,
    /// The run as `netbisect archive show ID` prints it.
    shown: String,
    /// The line that runs it again where and as it ran.
    command: String,
}

/// Where a run ran.
#[derive(Serialize)]
struct EnvironmentView {
    /// The server it measured against: host, and port where it was not
    /// netbisect's own server.
    server: String,
    port: Option<u16>,
    local_kernel: Option<String>,
    remote_kernel: Option<String>,
    /// "MODEL, N CPUs" of the end that ran `bench`.
    local_cpu: Option<String>,
    /// The VM it ran in: runner, accelerator, vCPUs, memory, network.
    vm: Option<String>,
}

/// The page of `point`'s runs in `config`'s chart; each run is read from
/// `archive` and shown in the unit of `config`'s chart.
pub fn point_page(
    global: &GlobalOptions,
    archive: &Archive,
    config: &ConfigOfPoints<'_>,
    point: &PointFigures,
) -> exit::Result<PointPage> {
    let units = Units::of_letter("m").context("netperf's default unit is unknown")?;
    let mut runs = Vec::with_capacity(point.run_ids.len());
    for id in &point.run_ids {
        let (stored, bytes) = archive.find(id).context("failed to read the archive")?;
        let record = Archive::stored_record(&stored, &bytes)
            .with_context(|| format!("run {id} in the archive is damaged"))?;
        // The settings and notes as `archive show` words them, and the
        // run as it prints it, in netperf's default unit.
        let context = RunContext::new(&record, units, true, true).with_sockets_at_end();
        let shown = crate::output::template(global, "run", &context, "the run")?;
        let mut view = run_view(&record, &context, config, shown);
        // Who stored it, but not from where: a writer's address is the
        // lab's business, not the published site's.
        view.stored_by = Some(stored.stored_by.unwrap_or_else(|| "unknown".to_string()));
        runs.push(view);
    }
    Ok(PointPage {
        file: point_file(config, point),
        html: render(config, point, runs)?,
    })
}

/// The page of `point` with `runs`.
fn render(
    config: &ConfigOfPoints<'_>,
    point: &PointFigures,
    runs: Vec<RunView>,
) -> exit::Result<String> {
    super::render_page(
        "site/runs.html",
        &PointView {
            title: config.title,
            config_file: config.config_file,
            metric: config.metric.name(),
            unit: &config.scale.unit,
            in_git_order: config.order == SeriesOrder::Git,
            commit: point.commit.as_deref(),
            point: point_row(point),
            runs,
        },
    )
}

/// What the page shows of `record`, whose `run` context is `context` and
/// whose text as `archive show` prints it is `shown`.
fn run_view(
    record: &RunRecord,
    context: &RunContext<'_>,
    config: &ConfigOfPoints<'_>,
    shown: String,
) -> RunView {
    let values: Vec<f64> = record
        .samples(config.metric)
        .iter()
        .map(|value| value / config.scale.divisor)
        .collect();
    let mean = if values.is_empty() {
        "-".to_string()
    } else {
        format_value(values.iter().sum::<f64>() / values.len() as f64)
    };
    let local = &record.env.local;
    RunView {
        id: record.id.clone(),
        started_at: record.started_at.clone(),
        finished_at: record.finished_at.clone(),
        commit: record.subject.commit.clone(),
        describe: record.subject.describe.clone(),
        label: record.subject.label.clone(),
        testbed: record.testbed.clone(),
        stored_by: None,
        values: values.iter().map(|value| format_value(*value)).collect(),
        mean,
        environment: EnvironmentView {
            server: record.endpoint.host.clone(),
            port: record.endpoint.port,
            local_kernel: local.kernel_release.clone(),
            remote_kernel: record
                .env
                .remote
                .as_ref()
                .and_then(|remote| remote.kernel_release.clone()),
            local_cpu: match (&local.cpu_model, local.cpu_count) {
                (Some(model), Some(count)) => Some(format!("{model}, {count} CPUs")),
                (Some(model), None) => Some(model.clone()),
                (None, Some(count)) => Some(format!("{count} CPUs")),
                (None, None) => None,
            },
            vm: measured_in(&[record]),
        },
        settings: context.settings.clone(),
        notes: context.notes.clone(),
        shown,
        command: archive::figures::run_command(record).render(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::series::scale_of;
    use run_record::spec::TestKind;
    use test_fixtures::record::RecordBuilder;

    #[test]
    fn a_run_page_escapes_every_free_text_and_names_the_point_s_file() {
        let hostile = "<script>x</script> & \"'\u{e9}";
        let record = RecordBuilder::new(TestKind::TcpStream)
            .commit("0123456789abcdef")
            .label(hostile)
            .testbed(hostile)
            .samples(&[9.4e9, 9.5e9])
            .build();
        let scale = scale_of("bits/s", "m");
        let config = ConfigOfPoints {
            title: hostile,
            config_file: "config-0123.html",
            spec_key: "fedcba9876543210fedcba",
            metric: Metric::ThroughputBps,
            order: SeriesOrder::Git,
            scale: &scale,
        };
        let point = PointFigures {
            label: "0123456789ab".into(),
            n_runs: 1,
            n_samples: 2,
            mean: 9450.0,
            median: 9450.0,
            interval: Some((8800.0, 10100.0)),
            change: None,
            run_ids: vec![record.id.clone()],
            commit: record.subject.commit.clone(),
            subject: Some(hostile.into()),
            page: None,
        };
        assert_eq!(
            point_file(&config, &point),
            "runs-fedcba9876543210-0123456789ab.html"
        );
        let units = Units::of_letter("m").unwrap();
        let context = RunContext::new(&record, units, true, true);
        let mut run = run_view(&record, &context, &config, hostile.into());
        assert_eq!(run.values, ["9400.00", "9500.00"]);
        assert_eq!(run.stored_by, None);
        run.stored_by = Some("writer_lab_a".into());
        let html = render(&config, &point, vec![run]).unwrap();
        assert!(
            crate::site::page_text::inner_of(&html, "tr")
                .iter()
                .any(|row| crate::site::page_text::text_of(row) == "stored by writer_lab_a"),
            "{html}"
        );
        let escaped = "&lt;script&gt;x&lt;/script&gt; &amp; &quot;&#39;&#233;";
        assert!(!html.contains("<script"), "{html}");
        // Title twice (head, link back), subject, label, testbed, the
        // text as shown; the command quotes the label and the testbed.
        assert!(html.matches(escaped).count() >= 6, "{html}");
        assert!(
            html.contains("--label &quot;$(printf &#39;\\074script"),
            "{html}"
        );
        assert!(html.is_ascii());
    }
}
