//! End-to-end tests of the `netbisect` binary, one module per area.

mod archive;
mod bench;
mod bisect;
mod env;
mod help;
mod record;
