//! Inputs for scripts/bench-memory.sh (not a test): run records with
//! many latency buckets, as JSON lines on stdout.
//!
//! `histograms N ITERATIONS BUCKETS`: N TCP_RR records of ITERATIONS
//! iterations, each iteration and the summary with a latency histogram
//! of BUCKETS buckets. Up to the layout's 2240 buckets the histograms are
//! as a run records them (every bucket named by its highest value); past
//! it the buckets are 1000001, 1000002, ... ns, which no recorded
//! histogram has, as a hostile record would carry them.

use run_record::record::histogram::{N_BUCKETS, bucket_high};
use run_record::record::{LatencyHistogram, Summary};
use run_record::spec::TestKind;
use std::io::Write;
use test_fixtures::record::RecordBuilder;

fn histogram(n_buckets: usize) -> LatencyHistogram {
    let buckets: Vec<[u64; 2]> = if n_buckets <= N_BUCKETS {
        (N_BUCKETS - n_buckets..N_BUCKETS)
            .map(|index| [bucket_high(index), 3])
            .collect()
    } else {
        (1..=n_buckets as u64)
            .map(|value| [1_000_000 + value, 3])
            .collect()
    };
    LatencyHistogram {
        sub_buckets: 64,
        count: 3 * n_buckets as u64,
        min_ns: buckets.first().map_or(0, |bucket| bucket[0]),
        max_ns: buckets.last().map_or(0, |bucket| bucket[0]),
        buckets,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |idx: usize| -> usize {
        args.get(idx)
            .and_then(|text| text.parse().ok())
            .unwrap_or_else(|| panic!("usage: histograms N ITERATIONS BUCKETS"))
    };
    assert_eq!(args.first().map(String::as_str), Some("histograms"));
    let (n_records, n_iterations, n_buckets) = (number(1), number(2), number(3));
    let histogram = histogram(n_buckets);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for record_idx in 0..n_records {
        let samples: Vec<f64> = (0..n_iterations)
            .map(|idx| 50_000.0 + (record_idx * n_iterations + idx) as f64)
            .collect();
        let summary_histogram = histogram.clone();
        let record = RecordBuilder::new(TestKind::TcpRr)
            .commit("aaaa1111")
            .label(if record_idx % 2 == 0 {
                "base"
            } else {
                "patched"
            })
            .samples(&samples)
            .each_iteration(|_, iteration| iteration.latency_histogram = Some(histogram.clone()))
            .summary_with(move |summary: &mut Summary| {
                summary.latency_histogram = Some(summary_histogram);
            })
            .build();
        let bytes = record.to_canonical_bytes().expect("canonical bytes");
        out.write_all(&bytes)
            .and_then(|()| out.write_all(b"\n"))
            .expect("stdout");
    }
    out.flush().expect("stdout");
}
