//! Tests of the chart as drawn: targets, links, cut intervals, and
//! where its texts fall.

use super::*;

fn point(label: &str, center: f64) -> ChartPoint {
    ChartPoint {
        label: label.to_string(),
        center,
        low: center - 1.0,
        high: center + 1.0,
        detail: format!("{label} <&> {center}"),
        link: None,
    }
}

#[test]
fn every_point_gets_a_target_with_an_escaped_title() {
    let chart = SeriesChart {
        caption: "a <b> & c".into(),
        x_name: "commit".into(),
        y_name: "10^6bits/s".into(),
        points: vec![point("aaa", 10.0), point("bbb", 11.0), point("ccc", 20.0)],
        markers: vec![ChartMarker {
            index: 2,
            text: "change +80% (p=0.001)".into(),
        }],
    };
    let svg = series_svg(&chart).unwrap().as_str().to_string();
    assert_eq!(svg.matches("class=\"point\"").count(), 3);
    assert_eq!(svg.matches("class=\"change\"").count(), 1);
    assert!(svg.contains("<title>aaa &lt;&amp;&gt; 10</title>"));
    assert!(svg.contains("a &lt;b&gt; &amp; c"));
    assert!(!svg.contains("<b>"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg,
        series_svg(&chart).unwrap().as_str(),
        "the same chart, the same bytes"
    );
}

#[test]
fn no_point_or_a_non_finite_one_is_an_error() {
    let mut chart = SeriesChart {
        caption: String::new(),
        x_name: String::new(),
        y_name: String::new(),
        points: Vec::new(),
        markers: Vec::new(),
    };
    assert!(matches!(series_svg(&chart), Err(ChartError::Empty)));
    chart.points.push(point("a", f64::NAN));
    assert!(matches!(series_svg(&chart), Err(ChartError::NotFinite(0))));
}

/// The texts of `svg` as plotters wrote them: where each is anchored,
/// how, at what font size, and what it says; rotated ones left out.
fn texts(svg: &str) -> Vec<(f64, String, f64, String)> {
    let attr = |tag: &str, name: &str| -> String {
        let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[start..start + tag[start..].find('"').unwrap()].to_string()
    };
    svg.split("<text ")
        .skip(1)
        .filter(|text| !text[..text.find('>').unwrap()].contains("transform"))
        .map(|text| {
            let tag = format!(" {}", &text[..text.find('>').unwrap()]);
            let content = &text[text.find('>').unwrap() + 1..text.find("</text>").unwrap()];
            (
                attr(&tag, "x").parse().unwrap(),
                attr(&tag, "text-anchor"),
                attr(&tag, "font-size").parse().unwrap(),
                content.trim().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_label_is_inside_the_chart_and_ticks_share_their_precision() {
    let points: Vec<ChartPoint> = (0..40)
        .map(|idx| ChartPoint {
            label: format!("04-01 {:02}:{:02}:00", idx / 60, idx % 60),
            // Across 100, where a value's own precision changes.
            center: 98.0 + (idx % 7) as f64 * 0.5,
            low: 97.7 + (idx % 7) as f64 * 0.5,
            high: 98.3 + (idx % 7) as f64 * 0.5,
            detail: String::new(),
            link: None,
        })
        .collect();
    let chart = SeriesChart {
        caption: format!(
            "TCP_STREAM {} (testbed a-long-testbed-name)",
            "-m 65536 ".repeat(12)
        ),
        x_name: "run, in time order (UTC)".into(),
        y_name: "mean, Trans/s (95% interval)".into(),
        points,
        markers: vec![ChartMarker {
            index: 39,
            text: "change +80.0% (p<0.0001), and a long tail of words".into(),
        }],
    };
    let svg = series_svg(&chart).unwrap().as_str().to_string();
    let texts = texts(&svg);
    assert!(texts.len() > 10, "{svg}");
    for (x, anchor, font_px, content) in &texts {
        let width = content.chars().count() as f64 * font_px * 0.62;
        let (left, right) = match anchor.as_str() {
            "middle" => (x - width / 2.0, x + width / 2.0),
            "end" => (x - width, *x),
            _ => (*x, x + width),
        };
        assert!(
            left >= 0.0 && right <= f64::from(WIDTH),
            "{content:?} runs from {left} to {right}"
        );
    }
    let ticks: Vec<&str> = texts
        .iter()
        .filter(|(_, anchor, _, content)| anchor == "end" && content.parse::<f64>().is_ok())
        .map(|(_, _, _, content)| content.as_str())
        .collect();
    assert!(ticks.len() > 3, "{ticks:?}");
    let decimals = |tick: &str| tick.split_once('.').map_or(0, |(_, after)| after.len());
    assert!(
        ticks
            .iter()
            .all(|tick| decimals(tick) == decimals(ticks[0])),
        "{ticks:?}"
    );
}

#[test]
fn a_cut_interval_is_marked_and_a_point_links_to_its_page() {
    let mut points: Vec<ChartPoint> = (0..6).map(|idx| point("p", 100.0 + idx as f64)).collect();
    points[3].low = -5_000.0;
    points[3].high = 5_000.0;
    points[2].link = Some("runs-2.html".into());
    let chart = SeriesChart {
        caption: String::new(),
        x_name: String::new(),
        y_name: String::new(),
        points,
        markers: Vec::new(),
    };
    let svg = series_svg(&chart).unwrap().as_str().to_string();
    assert_eq!(
        svg.matches("<polygon class=\"clipped\"").count(),
        2,
        "{svg}"
    );
    assert_eq!(svg.matches("<a href=\"runs-2.html\">").count(), 1, "{svg}");
    // The axis is the narrow points', not the wide one's.
    assert!(!svg.contains(">\n5000") && !svg.contains("-5000"), "{svg}");
}
