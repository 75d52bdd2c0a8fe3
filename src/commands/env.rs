//! `netbisect env`: what this host's environment looks like to netbisect.

use crate::cli::{EnvArgs, GlobalArgs};
use crate::exit::Code;
use crate::output;

pub fn run(global: &GlobalArgs, args: &EnvArgs) -> anyhow::Result<Code> {
    let env = bench_core::host::capture_local(args.interface.as_deref());
    output::emit(
        global,
        || output::pretty(&env, "the environment"),
        || {
            let context = serde_json::json!({ "env": env });
            output::template(global, "env", &context, "the environment")
        },
    )?;
    Ok(Code::Ok)
}
