//! What the comparison and history tests share: scattered samples, sealed
//! runs carrying them, and the check (or rewrite) of the committed
//! template samples those tests generate.

use run_record::record::{CpuFigures, RunRecord, Summary};
use run_record::spec::TestKind;
use serde::Serialize;
use test_fixtures::record::RecordBuilder;

/// Deterministic noise in [-1, 1): a 64-bit linear congruential
/// generator (Knuth's MMIX constants), enough to scatter samples.
pub struct Noise(pub u64);

impl Noise {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 / (1_u64 << 53) as f64) * 2.0 - 1.0
    }

    /// `n` values around `level`, spread by `relative` of it.
    pub fn around(&mut self, level: f64, relative: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| level * (1.0 + relative * self.next()))
            .collect()
    }
}

/// A sealed run of `test` at `commit` whose iterations carry
/// `samples` as the primary metric. Request/response runs also get a
/// p99 latency of 1.5 transaction times; runs with `cpu` get a local
/// service demand of 1000 / sample.
pub fn run(
    test: TestKind,
    commit: &str,
    started_at: &str,
    samples: &[f64],
    cpu: bool,
) -> RunRecord {
    RecordBuilder::new(test)
        .spec_with(|spec| spec.local_cpu = cpu)
        .started_at(started_at)
        .finished_at(started_at)
        .commit(commit)
        .samples(samples)
        .each_iteration(|idx, iteration| {
            iteration.cpu = cpu.then(|| CpuFigures {
                local_service_demand: Some(1000.0 / samples[idx]),
                ..CpuFigures::default()
            });
        })
        .summary(Summary::default())
        .build()
}

/// Where the template samples live: the renderer's rules test renders
/// every one of them and pins the text with a snapshot.
fn samples_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/template-samples")
}

/// Checks that the committed sample `name` is `value` serialised, so
/// the samples the templates are tested on follow the schema. With
/// `NETBISECT_UPDATE_SAMPLES` set, rewrites it instead.
pub fn check_template_sample(name: &str, value: &impl Serialize) {
    let text = serde_json::to_string_pretty(value).unwrap() + "\n";
    let path = samples_dir().join(format!("{name}.json"));
    if std::env::var_os("NETBISECT_UPDATE_SAMPLES").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{name}.json is stale: rerun with NETBISECT_UPDATE_SAMPLES=1, then review the snapshots"
    );
}
