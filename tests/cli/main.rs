//! End-to-end tests of the `netbisect` binary, one module per area.

mod archive;
mod bench;
mod compare;
mod env;
mod help;
mod history;
mod record;
