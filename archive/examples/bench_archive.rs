//! Benchmark helper for scripts/bench-archive.sh (not a test).
//!
//! - `gen N FILE`: writes N generated run records as JSON lines.
//! - `fill ARCHIVE FROM N`: stores generated records FROM..FROM+N directly,
//!   50000 to a transaction, into a file or a `postgres://` address.
//! - `copy FILE ADDRESS FROM`: copies the runs of a SQLite archive FILE
//!   that started with generated run FROM or later, with their history
//!   rows, into the PostgreSQL archive at ADDRESS, with binary COPY: the
//!   same rows netbisect stored, without a statement per run.
//! - `query ARCHIVE`: times the selections compare and history make.
//! - `free-port`: prints a TCP port of 127.0.0.1 that is free now.
//! - `commit IDX`: prints the commit id of generated commit IDX.
//! - `config-key`: prints the config_key of the first configuration.
//!
//! Generated runs: 100 per commit (20 configurations, 5 repeats each),
//! three iterations, a local environment with the usual sysctls.

use archive::{Archive, CanonicalRun, Location, RunQuery};
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use run_record::env::HostEnv;
use run_record::record::{Environments, Iteration, Metric, RunRecord};
use run_record::spec::TestKind;
use std::io::Write;
use std::time::Instant;
use test_fixtures::record::RecordBuilder;

const RUNS_PER_COMMIT: u64 = 100;
const N_CONFIGS: u64 = 20;

fn commit_of(commit_idx: u64) -> String {
    format!("{:040x}", commit_idx.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Start time of generated run `seed`, in seconds since the epoch.
fn started_s(seed: u64) -> u64 {
    1_700_000_000 + seed * 11
}

fn record(seed: u64) -> RunRecord {
    let commit_idx = seed / RUNS_PER_COMMIT;
    let config_idx = (seed / 5) % N_CONFIGS;
    let base = 9e9 + (seed % 7) as f64 * 1e7;
    let iterations: Vec<Iteration> = (0..3)
        .map(|idx| Iteration {
            elapsed_s: 10.0,
            throughput_bps: base + f64::from(idx) * 1e6,
            bytes_sent: Some(11_250_000_000),
            bytes_received: Some(11_250_000_000),
            messages_sent: Some(686_645),
            messages_received: Some(686_645),
            ..Iteration::default()
        })
        .collect();
    let mut local = HostEnv {
        kernel_release: Some(format!("6.18.0-rc{}", commit_idx % 8)),
        cpu_model: Some("Generic x86-64 CPU".to_string()),
        cpu_count: Some(2),
        governor: Some("performance".to_string()),
        ..HostEnv::default()
    };
    for (name, value) in [
        ("net.core.rmem_max", "212992"),
        ("net.core.wmem_max", "212992"),
        ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
        ("net.ipv4.tcp_congestion_control", "cubic"),
    ] {
        local.sysctls.insert(name.to_string(), value.to_string());
    }
    let at = |offset_s: u64| {
        run_record::time::rfc3339_utc(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(offset_s + started_s(seed)),
        )
    };
    RecordBuilder::new(TestKind::TcpStream)
        .spec_with(|spec| {
            spec.send_size_bytes = 1024 * (1 + config_idx as u32);
            spec.iterations_max = 3;
            spec.iterations_min = 3;
        })
        .tool_version("0.1.0")
        .started_at(&at(0))
        .finished_at(&at(10))
        .endpoint("192.0.2.1", Some(12865))
        .commit(&commit_of(commit_idx))
        .label(&format!("step{}", commit_idx % 10))
        .testbed("lab1")
        .env(Environments {
            local,
            remote: None,
            vm: None,
        })
        .iterations(iterations)
        .build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => {
            let n_runs: u64 = args[2].parse()?;
            let mut out = std::io::BufWriter::new(std::fs::File::create(&args[3])?);
            for seed in 0..n_runs {
                out.write_all(&record(seed).to_canonical_bytes()?)?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
        }
        Some("fill") => {
            let mut archive = Archive::open_location(&Location::parse(args[2].as_ref())?)?;
            let from: u64 = args[3].parse()?;
            let n_runs: u64 = args[4].parse()?;
            let batch = 50_000;
            let mut seed = from;
            while seed < from + n_runs {
                let end = (seed + batch).min(from + n_runs);
                let runs = (seed..end)
                    .map(|seed| CanonicalRun::from_record(record(seed)))
                    .collect::<Result<Vec<_>, _>>()?;
                archive.store_all(&runs)?;
                seed = end;
            }
            println!("archive holds {} runs", archive.count()?);
        }
        Some("copy") => {
            let from: u64 = args[4].parse()?;
            let copied = copy_to_postgres(&args[2], &args[3], from)?;
            println!("copied {copied} runs");
        }
        Some("query") => {
            let archive = Archive::open_location_read_only(&Location::parse(args[2].as_ref())?)?;
            let config_key = record(0).config_key;
            // compare: every run of two commits under one config_key,
            // decoded and verified.
            let started = Instant::now();
            let mut n_runs = 0;
            for commit_idx in [10, 9000] {
                let query = RunQuery {
                    commit_prefix: Some(commit_of(commit_idx)),
                    config_key_prefix: Some(config_key.clone()),
                    ..RunQuery::default()
                };
                n_runs += archive.records(&query)?.len();
            }
            let compare = started.elapsed();
            println!(
                "compare selection: {n_runs} runs of 2 commits, one config_key: {:.1} ms",
                compare.as_secs_f64() * 1e3
            );
            // history: one metric of one config_key across all commits.
            let started = Instant::now();
            let query = RunQuery {
                config_key_prefix: Some(config_key),
                ..RunQuery::default()
            };
            let values = archive.metric_values(&query, Metric::ThroughputBps)?;
            let mut commits: Vec<&str> =
                values.iter().filter_map(|v| v.commit.as_deref()).collect();
            commits.sort_unstable();
            commits.dedup();
            let history = started.elapsed();
            println!(
                "history selection: {} values over {} commits: {:.1} ms",
                values.len(),
                commits.len(),
                history.as_secs_f64() * 1e3
            );
        }
        Some("commit") => {
            let commit_idx: u64 = args[2].parse()?;
            println!("{}", commit_of(commit_idx));
        }
        Some("config-key") => {
            println!("{}", record(0).config_key);
        }
        Some("free-port") => {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            println!("{}", listener.local_addr()?.port());
        }
        _ => {
            eprintln!(
                "usage: bench_archive gen N FILE | fill ARCHIVE FROM N \
                 | copy FILE ADDRESS FROM | query ARCHIVE | commit IDX | config-key | free-port"
            );
            std::process::exit(2);
        }
    }
    Ok(())
}

/// The columns `runs` has in both backends, in the order of `RUN_TYPES`.
const RUN_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
     source_tool, started_at, n_iterations, throughput_bps, transaction_rate, record, \
     latency_mean_us, latency_p50_us, latency_p90_us, latency_p99_us, latency_p999_us, \
     local_cpu_pct, remote_cpu_pct, local_service_demand, remote_service_demand, imported_at";

/// The columns of `run_series` in PostgreSQL (schema 3): the file's, and
/// the run's label.
const SERIES_COLUMNS: &str = "config_key, started_at, run_id, spec_key, series, label";

/// The same columns read from the file, whose `run_series` has no label:
/// the run's.
const FILE_SERIES_COLUMNS: &str = "run_series.config_key, run_series.started_at, run_id, \
     spec_key, series, runs.label";

/// One value of a row read from SQLite, as PostgreSQL takes it.
enum Value {
    Text(Option<String>),
    Integer(i64),
    Real(Option<f64>),
    Blob(Vec<u8>),
}

impl Value {
    fn as_sql(&self) -> &(dyn ToSql + Sync) {
        match self {
            Value::Text(value) => value,
            Value::Integer(value) => value,
            Value::Real(value) => value,
            Value::Blob(value) => value,
        }
    }
}

/// Copies the rows of `table` that `select` reads from `file` into the
/// PostgreSQL archive through `client`, each column read as `types` says;
/// returns how many.
fn copy_rows(
    file: &rusqlite::Connection,
    transaction: &mut postgres::Transaction<'_>,
    (table, columns, types): (&str, &str, &[Type]),
    select: &str,
    since: &str,
) -> Result<u64, Box<dyn std::error::Error>> {
    let sink = transaction.copy_in(&format!("COPY {table} ({columns}) FROM STDIN BINARY"))?;
    let mut writer = BinaryCopyInWriter::new(sink, types);
    let mut statement = file.prepare(select)?;
    let mut rows = statement.query([since])?;
    let mut copied = 0;
    while let Some(row) = rows.next()? {
        let values = types
            .iter()
            .enumerate()
            .map(|(column, kind)| {
                Ok(match *kind {
                    Type::INT8 => Value::Integer(row.get(column)?),
                    Type::FLOAT8 => Value::Real(row.get(column)?),
                    Type::BYTEA => Value::Blob(row.get(column)?),
                    _ => Value::Text(row.get(column)?),
                })
            })
            .collect::<Result<Vec<_>, rusqlite::Error>>()?;
        let values: Vec<&(dyn ToSql + Sync)> = values.iter().map(Value::as_sql).collect();
        writer.write(&values)?;
        copied += 1;
    }
    writer.finish()?;
    Ok(copied)
}

/// Copies the runs of the SQLite archive `file` that started with
/// generated run `from` or later, and their rows of `run_series`, into
/// the PostgreSQL archive at `address`, in one transaction.
fn copy_to_postgres(
    file: &str,
    address: &str,
    from: u64,
) -> Result<u64, Box<dyn std::error::Error>> {
    // Opened through netbisect first: the tables exist at its schema.
    drop(Archive::open_location(&Location::parse(address.as_ref())?)?);
    let file =
        rusqlite::Connection::open_with_flags(file, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut client = postgres::Client::connect(address, postgres::NoTls)?;
    let since = run_record::time::sortable_utc(&run_record::time::rfc3339_utc(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(started_s(from)),
    ));
    let mut run_types = vec![Type::TEXT; 9];
    run_types.extend([Type::INT8, Type::FLOAT8, Type::FLOAT8, Type::BYTEA]);
    run_types.extend([Type::FLOAT8; 9]);
    run_types.push(Type::TEXT);
    let mut transaction = client.transaction()?;
    let copied = copy_rows(
        &file,
        &mut transaction,
        ("runs", RUN_COLUMNS, &run_types),
        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE started_at >= ?1"),
        &since,
    )?;
    copy_rows(
        &file,
        &mut transaction,
        ("run_series", SERIES_COLUMNS, &[Type::TEXT; 6]),
        &format!(
            "SELECT {FILE_SERIES_COLUMNS} FROM run_series JOIN runs ON runs.id = run_id \
             WHERE run_series.started_at >= ?1"
        ),
        &since,
    )?;
    transaction.commit()?;
    Ok(copied)
}
