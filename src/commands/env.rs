//! `netbisect env`: what this host's environment looks like to netbisect.
//! An interface that does not exist is an input error, not an empty
//! description.

use crate::cli::EnvArgs;
use crate::exit::{self, Code, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::views::env::EnvContext;

pub fn run(global: &GlobalOptions, args: &EnvArgs) -> exit::Result<Code> {
    if let Some(name) = &args.interface
        && !bench_core::host::interface_exists(name)
    {
        return Err(InputError(format!(
            "there is no network interface '{name}' here (`ip link` lists them)"
        ))
        .into());
    }
    let env = bench_core::host::capture_local(args.interface.as_deref());
    output::emit(
        global,
        || output::pretty(&env, "the environment"),
        || {
            let context = EnvContext { env: &env };
            output::template(global, "env", &context, "the environment")
        },
    )?;
    Ok(Code::Ok)
}
