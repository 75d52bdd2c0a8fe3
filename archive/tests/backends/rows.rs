//! What a batch leaves in the tables, row by row: the same on both
//! backends, whichever way each sends its rows (the file one statement a
//! run, the database a column array a column), for a batch larger than
//! what one statement of the database takes, with runs already present,
//! and values absent from some runs and not from others.

use super::{Place, canonical, places, record};
use archive::Archive;
use run_record::spec::TestKind;

/// The columns of `runs` both backends have, in a fixed order.
const RUN_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
     source_tool, started_at, n_iterations, throughput_bps, transaction_rate, record, \
     latency_mean_us, latency_p50_us, latency_p90_us, latency_p99_us, latency_p999_us, \
     local_cpu_pct, remote_cpu_pct, local_service_demand, remote_service_demand, imported_at";

/// The columns of `run_series` both backends have.
const SERIES_COLUMNS: &str = "config_key, started_at, run_id, spec_key, series";

/// Every row of `table` (its `columns`, ordered by `order`), each value
/// written out the same way for either backend.
fn rows(place: &Place, table: &str, columns: &str, order: &str) -> Vec<Vec<String>> {
    let sql = format!("SELECT {columns} FROM {table} ORDER BY {order}");
    match place {
        Place::File(dir) => {
            use rusqlite::types::ValueRef;
            let connection = rusqlite::Connection::open(dir.path().join("archive.db")).unwrap();
            let mut select = connection.prepare(&sql).unwrap();
            let n_columns = select.column_count();
            let mut rows = select.query([]).unwrap();
            let mut written = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                written.push(
                    (0..n_columns)
                        .map(|idx| match row.get_ref(idx).unwrap() {
                            ValueRef::Null => "NULL".to_string(),
                            ValueRef::Integer(integer) => integer.to_string(),
                            ValueRef::Real(real) => format!("{real:?}"),
                            ValueRef::Text(text) | ValueRef::Blob(text) => {
                                String::from_utf8_lossy(text).into_owned()
                            }
                        })
                        .collect(),
                );
            }
            written
        }
        Place::Server(cluster, name) => {
            use postgres::types::Type;
            let mut client =
                postgres::Client::connect(&cluster.url(name), postgres::NoTls).unwrap();
            let mut written = Vec::new();
            for row in client.query(sql.as_str(), &[]).unwrap() {
                written.push(
                    (0..row.len())
                        .map(|idx| match *row.columns()[idx].type_() {
                            Type::INT8 => row.get::<_, Option<i64>>(idx).map(|v| v.to_string()),
                            Type::FLOAT8 => {
                                row.get::<_, Option<f64>>(idx).map(|v| format!("{v:?}"))
                            }
                            Type::BYTEA => row
                                .get::<_, Option<Vec<u8>>>(idx)
                                .map(|v| String::from_utf8_lossy(&v).into_owned()),
                            _ => row.get::<_, Option<String>>(idx),
                        })
                        .map(|value| value.unwrap_or_else(|| "NULL".to_string()))
                        .collect(),
                );
            }
            written
        }
    }
}

#[test]
fn a_batch_leaves_the_same_rows_in_both_backends() {
    let runs: Vec<_> = (0..2100_u32)
        .map(|run_idx| {
            let test = if run_idx % 3 == 0 {
                TestKind::TcpRr
            } else {
                TestKind::TcpStream
            };
            let mut run = record(
                &format!("{:08x}", run_idx / 7),
                &format!("step{}", run_idx % 5),
                1e9 + f64::from(run_idx) * 1000.5,
                test,
            );
            if run_idx % 4 == 0 {
                run.subject.label = None;
            }
            if run_idx % 11 == 0 {
                run.subject.commit = None;
                run.subject.describe = Some(format!("v1.{run_idx}"));
            }
            run.seal().unwrap();
            canonical(run)
        })
        .collect();
    let mut tables = Vec::new();
    for place in places() {
        let mut archive = Archive::open_location(&place.location()).unwrap();
        let first = archive.store_all(&runs[..300]).unwrap();
        assert_eq!((first.added, first.already_present), (300, 0));
        let all = archive.store_all(&runs).unwrap();
        assert_eq!((all.added, all.already_present), (1800, 300));
        drop(archive);
        let stored = rows(&place, "runs", RUN_COLUMNS, "id");
        assert_eq!(stored.len(), 2100);
        let series = rows(&place, "run_series", SERIES_COLUMNS, "run_id");
        tables.push((place.location().to_string(), stored, series));
    }
    let (first_place, first_runs, first_series) = &tables[0];
    for (place, runs, series) in &tables[1..] {
        assert!(
            runs == first_runs,
            "runs differ between {first_place} and {place}"
        );
        assert!(
            series == first_series,
            "run_series differ between {first_place} and {place}"
        );
    }
}
