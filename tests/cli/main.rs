//! End-to-end tests of the `netbisect` binary, one module per area.

mod bench;
mod env;
mod help;
mod record;
mod sweep;
