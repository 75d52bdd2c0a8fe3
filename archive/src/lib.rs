//! archive: the SQLite store of run records.
