//! The text of a cell of `compare`'s tables: figures as netperf prints
//! them (`-` where a side has none) and a row's change with its mark.
//! Throughput is [`crate::views::units::Units`]'.

use crate::render::filters::{figure_text, fixed_text, signed_pct_text};
use archive::compare::{ChangeKind, ComparisonRow, Verdict};

/// A whole number, such as a socket size or a count of messages.
pub(super) fn whole(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |value| fixed_text(value, 0))
}

/// A size in bytes.
pub(super) fn bytes(value: Option<u64>) -> String {
    value.map_or_else(|| "-".to_string(), |value| value.to_string())
}

/// A measured figure with `decimals` decimals, or more where it needs
/// them ([`figure_text`]).
pub(super) fn figure(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_string(), |value| figure_text(value, decimals))
}

/// Seconds, with two decimals.
pub(super) fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |value| fixed_text(value, 2))
}

/// A row's mark: `?` too few samples, `~` no significant difference,
/// `!` a significant regression, `+` a significant improvement.
pub(in crate::views) fn mark(row: &ComparisonRow) -> &'static str {
    match (row.verdict, row.direction) {
        (Verdict::NeedSamples, _) => "?",
        (Verdict::NotSignificant, _) => "~",
        (Verdict::Significant, Some(ChangeKind::Regression)) => "!",
        (Verdict::Significant, _) => "+",
    }
}

/// A row's change of the means, signed, and its mark: `+9.8% +`.
pub(super) fn change(row: &ComparisonRow) -> String {
    let change = row
        .change_pct
        .map_or_else(|| "-".to_string(), |pct| signed_pct_text(pct, 1));
    format!("{change} {}", mark(row))
}

/// The CPU figures of a side, as the line under its figures gives them:
/// utilisation local and remote, service demand local and remote.
pub(super) fn cpu_figures(figures: &archive::figures::SideFigures) -> [String; 4] {
    [
        figure(figures.local_cpu_pct, 2),
        figure(figures.remote_cpu_pct, 2),
        figure(figures.local_service_demand, 3),
        figure(figures.remote_service_demand, 3),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        verdict: Verdict,
        direction: Option<ChangeKind>,
        change_pct: Option<f64>,
    ) -> ComparisonRow {
        ComparisonRow {
            metric: "throughput_bps".into(),
            unit: "bits/s".into(),
            higher_is_better: true,
            first: None,
            second: None,
            change_pct,
            change_low_pct: None,
            change_high_pct: None,
            p_value: None,
            verdict,
            direction,
            samples_to_decide: None,
            effect_pct: None,
            more_runs_per_side: None,
        }
    }

    #[test]
    fn a_change_carries_the_mark_of_its_verdict() {
        let regression = Some(ChangeKind::Regression);
        let improvement = Some(ChangeKind::Improvement);
        assert_eq!(
            change(&row(Verdict::Significant, improvement, Some(9.84))),
            "+9.8% +"
        );
        assert_eq!(
            change(&row(Verdict::Significant, regression, Some(-8.14))),
            "-8.1% !"
        );
        assert_eq!(
            change(&row(Verdict::NotSignificant, regression, Some(-0.01))),
            "+0.0% ~"
        );
        assert_eq!(change(&row(Verdict::NeedSamples, regression, None)), "- ?");
        assert_eq!(mark(&row(Verdict::Significant, None, Some(0.0))), "+");
    }

    #[test]
    fn a_side_without_a_figure_prints_a_dash() {
        assert_eq!(whole(Some(29221.6)), "29222");
        assert_eq!(bytes(Some(4_194_304)), "4194304");
        assert_eq!(figure(Some(0.0004), 3), "0.00040");
        assert_eq!(seconds(Some(10.0)), "10.00");
        for text in [whole(None), bytes(None), figure(None, 2), seconds(None)] {
            assert_eq!(text, "-");
        }
    }
}
