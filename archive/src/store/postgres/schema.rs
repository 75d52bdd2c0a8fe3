//! The PostgreSQL archive's schema: its ordered migrations and the
//! versions the reads look at. Migration `n` takes a database from
//! version `n - 1` to version `n`; `PgArchive::migrate` applies the
//! pending ones in one transaction.

/// The newest schema version of a PostgreSQL archive this build writes
/// and reads (numbered apart from the SQLite file's).
pub const CURRENT_VERSION: u32 = 6;

/// The version from which `run_series` has each run's label
/// ([`MIGRATIONS`]), and a history joins it by the label too.
pub(super) const SERIES_LABEL_VERSION: u32 = 3;

/// The version from which the lab's tables exist ([`MIGRATIONS`]).
pub(super) const LAB_VERSION: u32 = 4;

/// The version from which `runs` says who stored each run
/// (`stored_by`, `stored_from`; [`MIGRATIONS`]).
pub(super) const STORED_BY_VERSION: u32 = 5;

/// The key of the advisory lock migrations take ("nbis").
pub(super) const MIGRATION_LOCK: i64 = 0x6e62_6973;

/// Migrations in order: index 0 makes version 1.
///
/// Version history:
///
/// 1. The SQLite file's schema at its version 6, in PostgreSQL's types:
///    `runs` (text columns that are matched by prefix or ordered in the
///    "C" collation, so that ordering is bytewise as in SQLite and LIKE
///    prefixes use the indexes), `run_series`, `bisect_sessions`,
///    `bisect_events`, and `netbisect_archive`, the schema version.
/// 2. `runs_history` covers what a history reads of `runs` (`commit_id`
///    and `test` included, as the file's index has them), so that a
///    history is an index-only scan of `runs` and reads no row of that
///    table of records.
/// 3. `run_series` has each run's `label`, and `run_series_history`
///    orders it as `runs_history` orders the runs. A PostgreSQL table is
///    not clustered by its primary key (the SQLite file's `run_series` is
///    a WITHOUT ROWID table in key order): a history's rows of
///    `run_series`, fetched run by run through the key, were thousands
///    of lookups into a heap in no useful order. With the label beside
///    the series, both sides of a history are read in one order by one
///    index scan each and merged. The label is copied from `runs`,
///    analyzed so that the planner sees it, and stored by every writer
///    from then on. A trigger fills in the label of a row stored without
///    one: a netbisect of version 2 that had the archive open while
///    another upgraded it stores its runs without a label, and they
///    would otherwise be missing from their label's history.
/// 4. The lab's tables, as the file has them at its version 9 (see
///    `store/lab.rs` and the file's schema): the queue `lab_jobs`, taken
///    with `FOR UPDATE SKIP LOCKED` so that workers taking jobs at once
///    never wait for each other nor take the same; `lab_workers`,
///    `lab_tracks`, `lab_regressions` (unique by track and range, one
///    active per track) and the outbox `lab_notifications`.
/// 5. Who stored each run, as the server knows it: `stored_by`, the
///    role of the session that inserted the row (`current_user`), and
///    `stored_from`, the address its connection came from (`[local]`
///    over a Unix socket, as the server's own log names it). Both are
///    the columns' defaults, which no insert of netbisect names, and a
///    trigger sets them on every insert and keeps them on every update
///    whatever the statement says, so that a writer cannot store a run
///    under another's name (only the table's owner may drop the
///    trigger). Runs stored before this version have neither (NULL,
///    shown as unknown). Merged and spooled runs are stored by the role
///    that wrote them into this archive.
/// 6. `run_series_by_run`, as the file's version 11: a run removed
///    (`archive prune`) takes its history row by its id, and the foreign
///    key's check finds it through the index.
pub(super) const MIGRATIONS: &[&str] = &[
    "
    CREATE TABLE netbisect_archive (
        application text PRIMARY KEY CHECK (application = 'netbisect'),
        schema_version integer NOT NULL
    );
    CREATE TABLE runs (
        id text COLLATE \"C\" PRIMARY KEY,
        commit_id text COLLATE \"C\",
        describe text,
        label text COLLATE \"C\",
        config_key text COLLATE \"C\" NOT NULL,
        testbed text COLLATE \"C\" NOT NULL,
        test text COLLATE \"C\" NOT NULL,
        source_tool text COLLATE \"C\" NOT NULL,
        started_at text COLLATE \"C\" NOT NULL,
        n_iterations bigint NOT NULL,
        throughput_bps double precision NOT NULL,
        transaction_rate double precision,
        record bytea NOT NULL,
        latency_mean_us double precision,
        latency_p50_us double precision,
        latency_p90_us double precision,
        latency_p99_us double precision,
        latency_p999_us double precision,
        local_cpu_pct double precision,
        remote_cpu_pct double precision,
        local_service_demand double precision,
        remote_service_demand double precision,
        imported_at text
    );
    CREATE INDEX runs_by_commit ON runs (commit_id, config_key);
    CREATE INDEX runs_by_config ON runs (config_key, commit_id);
    CREATE INDEX runs_by_label ON runs (label, config_key);
    CREATE INDEX runs_by_time ON runs (started_at, id);
    CREATE INDEX runs_history ON runs (config_key, label, started_at, id);
    CREATE TABLE run_series (
        config_key text COLLATE \"C\" NOT NULL,
        started_at text COLLATE \"C\" NOT NULL,
        run_id text COLLATE \"C\" NOT NULL REFERENCES runs (id),
        spec_key text NOT NULL,
        series text NOT NULL CHECK (series::jsonb IS NOT NULL),
        PRIMARY KEY (config_key, started_at, run_id)
    );
    CREATE TABLE bisect_sessions (
        id bigserial PRIMARY KEY,
        repo text NOT NULL,
        spec text NOT NULL CHECK (spec::jsonb IS NOT NULL),
        config_key text,
        started_at text NOT NULL,
        ended_at text
    );
    CREATE UNIQUE INDEX bisect_sessions_active ON bisect_sessions (repo)
        WHERE ended_at IS NULL;
    CREATE TABLE bisect_events (
        session_id bigint NOT NULL REFERENCES bisect_sessions (id),
        seq bigint NOT NULL,
        event text NOT NULL CHECK (event::jsonb IS NOT NULL),
        written_at text NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
",
    "
    CREATE INDEX runs_history_covering ON runs (config_key, label, started_at, id)
        INCLUDE (commit_id, test);
    DROP INDEX runs_history;
    ALTER INDEX runs_history_covering RENAME TO runs_history;
",
    "
    ALTER TABLE run_series ADD COLUMN label text COLLATE \"C\";
    UPDATE run_series SET label = runs.label FROM runs
        WHERE runs.id = run_series.run_id AND runs.label IS NOT NULL;
    CREATE INDEX run_series_history ON run_series (config_key, label, started_at, run_id);
    ANALYZE run_series;
    CREATE FUNCTION run_series_label() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.label := (SELECT label FROM runs WHERE id = NEW.run_id);
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER run_series_label BEFORE INSERT ON run_series
        FOR EACH ROW WHEN (NEW.label IS NULL) EXECUTE FUNCTION run_series_label();
",
    "
    CREATE TABLE lab_jobs (
        id bigserial PRIMARY KEY,
        pool text COLLATE \"C\" NOT NULL,
        kind text NOT NULL,
        owner text COLLATE \"C\" NOT NULL,
        job_key text COLLATE \"C\" NOT NULL UNIQUE,
        payload text NOT NULL CHECK (payload::jsonb IS NOT NULL),
        priority bigint NOT NULL,
        state text NOT NULL CHECK (state IN ('queued', 'leased', 'done', 'failed')),
        worker text,
        attempts bigint NOT NULL DEFAULT 0,
        created_us bigint NOT NULL,
        leased_us bigint,
        lease_expires_us bigint,
        finished_us bigint,
        result text CHECK (result IS NULL OR result::jsonb IS NOT NULL)
    );
    CREATE INDEX lab_jobs_queue ON lab_jobs (pool, state, priority DESC, id);
    CREATE INDEX lab_jobs_by_owner ON lab_jobs (owner, state);
    CREATE TABLE lab_workers (
        name text COLLATE \"C\" PRIMARY KEY,
        pool text NOT NULL,
        host text NOT NULL,
        pid bigint NOT NULL,
        job_id bigint,
        started_us bigint NOT NULL,
        seen_us bigint NOT NULL
    );
    CREATE TABLE lab_tracks (
        track_key text COLLATE \"C\" PRIMARY KEY,
        spec text NOT NULL CHECK (spec::jsonb IS NOT NULL),
        created_us bigint NOT NULL,
        seen_us bigint NOT NULL
    );
    CREATE TABLE lab_regressions (
        id bigserial PRIMARY KEY,
        track text COLLATE \"C\" NOT NULL,
        good text NOT NULL,
        bad text NOT NULL,
        state text NOT NULL
            CHECK (state IN ('suspected', 'open', 'bisecting', 'bisected', 'refused', 'fixed',
            'dismissed')),
        detail text NOT NULL CHECK (detail::jsonb IS NOT NULL),
        session_id bigint REFERENCES bisect_sessions (id),
        culprit text,
        fixed_by text,
        driver text,
        driver_expires_us bigint,
        opened_us bigint NOT NULL,
        updated_us bigint NOT NULL,
        UNIQUE (track, good, bad)
    );
    CREATE UNIQUE INDEX lab_regressions_active ON lab_regressions (track)
        WHERE state IN ('open', 'bisecting');
    CREATE TABLE lab_notifications (
        id bigserial PRIMARY KEY,
        regression_id bigint NOT NULL UNIQUE REFERENCES lab_regressions (id),
        command text,
        body text NOT NULL,
        created_us bigint NOT NULL,
        sent_us bigint,
        attempts bigint NOT NULL DEFAULT 0,
        last_error text,
        next_attempt_us bigint NOT NULL,
        sender text,
        sender_expires_us bigint
    );
",
    "
    ALTER TABLE runs ADD COLUMN stored_by text;
    ALTER TABLE runs ADD COLUMN stored_from text;
    ALTER TABLE runs ALTER COLUMN stored_by SET DEFAULT current_user;
    ALTER TABLE runs ALTER COLUMN stored_from
        SET DEFAULT coalesce(host(inet_client_addr()), '[local]');
    CREATE FUNCTION runs_stored_by() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            NEW.stored_by := current_user;
            NEW.stored_from := coalesce(host(inet_client_addr()), '[local]');
        ELSE
            NEW.stored_by := OLD.stored_by;
            NEW.stored_from := OLD.stored_from;
        END IF;
        RETURN NEW;
    END
    $$;
    CREATE TRIGGER runs_stored_by BEFORE INSERT OR UPDATE ON runs
        FOR EACH ROW EXECUTE FUNCTION runs_stored_by();
",
    // A database whose version was set back by hand may have it already.
    "CREATE INDEX IF NOT EXISTS run_series_by_run ON run_series (run_id);",
];
