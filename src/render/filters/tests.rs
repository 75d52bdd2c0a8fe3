//! Tests of the filters.

use super::*;

#[test]
fn aligns_and_formats() {
    assert_eq!(rjust(Value::from(12), 5), "   12");
    assert_eq!(ljust(Value::from("ab"), 4), "ab  ");
    assert_eq!(fixed(Value::from(2.0 / 3.0), Some(3)).unwrap(), "0.667");
    assert_eq!(fixed(Value::from(()), None).unwrap(), "-");
    assert_eq!(fixed(Value::from(0.0064), Some(2)).unwrap(), "0.01");
    assert_eq!(figure(Value::from(0.0064), Some(2)).unwrap(), "0.0064");
    assert_eq!(figure(Value::from(0.05), Some(2)).unwrap(), "0.05");
    assert_eq!(figure(Value::from(0.051), Some(2)).unwrap(), "0.051");
    assert_eq!(figure(Value::from(0.5), Some(2)).unwrap(), "0.50");
    assert_eq!(figure(Value::from(0.0004), Some(3)).unwrap(), "0.00040");
    assert_eq!(figure(Value::from(0.0), Some(2)).unwrap(), "0.00");
    assert_eq!(figure(Value::from(()), None).unwrap(), "-");
    assert_eq!(signed_pct(Value::from(-8.14), None).unwrap(), "-8.1%");
    let texts = Value::from(vec!["current", "1432", ""]);
    let widths = Value::from(vec![-10, 7, -6]);
    assert_eq!(row(texts, widths).unwrap(), "current       1432");
    let texts = Value::from(vec!["a", "hidden", "b"]);
    let widths = Value::from(vec![2, 0, 2]);
    assert_eq!(row(texts, widths).unwrap(), " a  b");
    assert_eq!(signed_pct(Value::from(1.25), Some(2)).unwrap(), "+1.25%");
    assert_eq!(signed_pct(Value::from(-0.01), None).unwrap(), "+0.0%");
}

#[test]
fn scales_like_netperf() {
    assert_eq!(
        netperf_units(Value::from(11_831.79e6), "m").unwrap(),
        11_831.79
    );
    assert_eq!(netperf_units(Value::from(8192.0), "K").unwrap(), 1.0);
    assert!(netperf_units(Value::from(1.0), "x").is_err());
}

#[test]
fn commands_wrap_between_arguments_with_a_backslash() {
    let command = "netbisect ab --kernel-a vmlinuz-6.1.0-55-amd64 --vm-append 'a b c' -t TCP_RR";
    let lines = wrap_command(Value::from(command), 40);
    // Never between a flag and its value.
    assert_eq!(
        lines,
        [
            "netbisect ab \\",
            "    --kernel-a vmlinuz-6.1.0-55-amd64 \\",
            "    --vm-append 'a b c' -t TCP_RR",
        ]
    );
    let joined: String = lines
        .iter()
        .map(|line| line.trim_end_matches('\\').trim())
        .collect::<Vec<_>>()
        .join(" ");
    assert_eq!(joined, command);
    assert!(lines.iter().all(|line| line.len() <= 40));
}

#[test]
fn double_quoted_words_stay_whole() {
    let command = "netbisect bisect start --build 'make CC=\"ccache gcc\" -j8' \
                   --bench \"-t TCP_RR -l 5\" CC=\"ccache gcc\" --repo .";
    for width in 20..60 {
        let lines = wrap_command(Value::from(command), width);
        let joined: String = lines
            .iter()
            .map(|line| line.trim_end_matches('\\').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(joined, command, "{lines:?}");
        for line in &lines {
            assert!(!line.contains("CC=\"ccache \\"), "{lines:?}");
            assert!(!line.ends_with("\"-t \\"), "{lines:?}");
        }
    }
}

#[test]
fn text_from_records_is_plain() {
    assert_eq!(plain("current"), "current");
    assert_eq!(plain("org\u{1b}[31mred\nx\ty"), "org\\x1b[31mred\\nx\\ty");
    assert_eq!(plain("caf\u{e9}"), "caf\\u{e9}");
    assert_eq!(plain(&plain("caf\u{e9}\n")), plain("caf\u{e9}\n"));
    assert_eq!(length(Value::from("a\u{1b}b")).unwrap(), 6);
    assert_eq!(length(Value::from(vec![1, 2])).unwrap(), 2);
    assert_eq!(cut(Value::from("\u{1b}[31mred"), 6), "\\x1b[~");
    assert_eq!(cut(Value::from("base"), 6), "base");
}

#[test]
fn short_names_stay_apart() {
    let names = |list: &[&str]| list.iter().map(|name| name.to_string()).collect::<Vec<_>>();
    assert_eq!(
        unique_short_names(&names(&["current", "patched"]), 10),
        ["current", "patched"]
    );
    assert_eq!(
        unique_short_names(&names(&["nosg-gso-on", "nosg-gso-off"]), 10),
        ["nosg-gso~n", "nosg-gso~f"]
    );
    let long = names(&[
        "baseline-gro-on-tso-on-mtu9000",
        "baseline-gro-on-tso-on-mtu1500",
    ]);
    assert_eq!(unique_short_names(&long, 7), ["bas~000", "bas~500"]);
    assert_eq!(
        unique_short_names(&names(&["aaaaaaaaaaaaaaaax", "aaaaaaaaaaaaaaaax", "b"]), 4),
        ["aa~1", "aa~2", "b"]
    );
}

#[test]
fn tables_widen_to_their_figures_and_narrow_their_names() {
    let rows = Value::from(minijinja::value::Serde(serde_json::json!([
        ["", "Size", "Rate"],
        [],
        ["nosg-gso-on", "268435456", "1.5"],
        ["nosg-gso-off", "1", "2.5"],
    ])));
    let lines = table(rows.clone(), Value::from(vec![-10, 7, 6]), 80).unwrap();
    assert_eq!(
        lines,
        [
            "                  Size   Rate",
            "",
            "nosg-gso-on  268435456    1.5",
            "nosg-gso-off         1    2.5",
        ]
    );
    let lines = table(rows, Value::from(vec![-10, 7, 6]), 25).unwrap();
    assert_eq!(
        lines,
        [
            "              Size   Rate",
            "",
            "nosg-g~n 268435456    1.5",
            "nosg-g~f         1    2.5",
            "",
            "nosg-g~n: nosg-gso-on",
            "nosg-g~f: nosg-gso-off",
        ]
    );
}

#[test]
fn wraps_at_spaces() {
    assert_eq!(
        wrap_words(Value::from("aa bb cc dddddd"), 5),
        vec!["aa bb", "cc", "ddddd", "d"]
    );
    let long = "x".repeat(150);
    assert!(
        wrap_words(Value::from(long.as_str()), 72)
            .iter()
            .all(|line| line.len() <= 72)
    );
}

/// Renders `history_rows` over `points` (JSON) in git order, throughput
/// in 10^6 bits/s, with the given extremes and one change point.
fn history_rows_of(points: &str) -> Result<String, Error> {
    let mut environment = Environment::new();
    register(&mut environment);
    let points: serde_json::Value = serde_json::from_str(points).unwrap();
    environment.render_str(
        "{% set table = points | history_rows(order='git', unit='bits/s', units='m', \
         min_mean=1e9, max_mean=2e9, n_change_points=1) %}\
         {{ table.label_width }}/{{ table.bar_width }}\n{{ table.lines | join('\n') }}",
        minijinja::context! { points => minijinja::value::Serde(points) },
    )
}

#[test]
fn history_rows_cut_long_labels_escape_others_and_refuse_what_is_not_a_point() {
    let text = history_rows_of(
        r#"[{"label": "v6.10-rc3-01200-g0123456789ab-dirty-with-a-long-tail", "n_samples": 3,
             "mean": 1e9, "spread_pct": 0.25, "change": null},
            {"label": "caf\u00e9", "n_samples": 3, "mean": 2e9, "spread_pct": null,
             "change": {"change_pct": 100.0, "p_value": 0.00001}},
            {"label": "empty", "n_samples": 0, "mean": null, "spread_pct": null,
             "change": null}]"#,
    )
    .unwrap();
    let expected = "40/14\n\
        v6.10-rc3-01200-g0123456789ab-dirty-w...    3     1000.00    0.2  #\n\
        caf\\u{e9}                                   3     2000.00      -  ##############\n\
        \x20                                                  ^-- change +100.0% (p<0.0001)\n\
        empty                                       0           -      -";
    assert_eq!(text, expected);
    for line in text.lines() {
        assert!(line.len() <= 80, "{line}");
    }
    assert!(history_rows_of(r#"[{"label": "a", "n_samples": 1, "mean": "fast"}]"#).is_err());
    assert!(history_rows_of(r#"{"label": "a"}"#).is_err());
}
