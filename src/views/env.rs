//! The context of `env`: one host's environment as netbisect records it.

use run_record::env::HostEnv;
use serde::Serialize;

/// What the `env` template is given.
#[derive(Debug, Serialize)]
pub struct EnvContext<'a> {
    /// The host's environment.
    pub env: &'a HostEnv,
}
