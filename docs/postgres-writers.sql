-- Writers per testbed on a netbisect archive in PostgreSQL: each
-- testbed's machines log in as a role of their own, which may store
-- runs of that testbed only; readers may read everything.
--
-- Before: a superuser made the archive's owner and its database
--   CREATE ROLE netbisect_owner LOGIN PASSWORD '...';
--   CREATE DATABASE netbisect OWNER netbisect_owner;
-- and the owner created the archive's tables by opening it to write:
--   NETBISECT_ARCHIVE=postgres://netbisect_owner@db.example/netbisect \
--       netbisect archive sync
-- Then a superuser (or a role with CREATEROLE that owns the tables) runs
-- this file in that database:
--   psql -d netbisect -f postgres-writers.sql
-- and gives each login role a password (ALTER ROLE ... PASSWORD, or
-- \password in psql). The owner runs every later upgrade of the schema
-- (the first netbisect of a new version to open the archive as the
-- owner); a writer cannot change tables.
--
-- Rename the roles and testbeds to the lab's; a testbed more is one
-- CREATE ROLE and two CREATE POLICY, as for lab-b below.

-- Readers: every command that only reads (list, show, export, check,
-- compare, history, publish).
CREATE ROLE netbisect_reader NOLOGIN;
GRANT USAGE ON SCHEMA public TO netbisect_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO netbisect_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE netbisect_owner IN SCHEMA public
    GRANT SELECT ON TABLES TO netbisect_reader;

-- Writers: read, add runs, and keep the bisection journal and the lab's
-- queue (bisect, track, worker). No writer may update or delete a run.
CREATE ROLE netbisect_writer NOLOGIN IN ROLE netbisect_reader;
GRANT INSERT ON runs, run_series TO netbisect_writer;
GRANT INSERT, UPDATE, DELETE ON bisect_sessions, bisect_events, lab_jobs, lab_workers,
    lab_tracks, lab_regressions, lab_notifications TO netbisect_writer;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO netbisect_writer;

-- Row-level security: every role reads every run, and stores only the
-- runs its policies below let it. The owner is not held to it.
ALTER TABLE runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE run_series ENABLE ROW LEVEL SECURITY;
CREATE POLICY runs_read ON runs FOR SELECT USING (true);
CREATE POLICY run_series_read ON run_series FOR SELECT USING (true);

-- One role per testbed: writer_lab_a stores runs of testbed lab-a (the
-- name `bench --testbed` and `archive import --testbed` give), and the
-- history rows of those runs.
CREATE ROLE writer_lab_a LOGIN IN ROLE netbisect_writer;
CREATE POLICY runs_lab_a ON runs FOR INSERT TO writer_lab_a
    WITH CHECK (testbed = 'lab-a');
CREATE POLICY run_series_lab_a ON run_series FOR INSERT TO writer_lab_a
    WITH CHECK (EXISTS (SELECT 1 FROM runs
                        WHERE runs.id = run_series.run_id AND runs.testbed = 'lab-a'));

CREATE ROLE writer_lab_b LOGIN IN ROLE netbisect_writer;
CREATE POLICY runs_lab_b ON runs FOR INSERT TO writer_lab_b
    WITH CHECK (testbed = 'lab-b');
CREATE POLICY run_series_lab_b ON run_series FOR INSERT TO writer_lab_b
    WITH CHECK (EXISTS (SELECT 1 FROM runs
                        WHERE runs.id = run_series.run_id AND runs.testbed = 'lab-b'));

-- A role that reads only.
CREATE ROLE lab_viewer LOGIN IN ROLE netbisect_reader;
