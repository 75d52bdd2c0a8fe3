//! `netbisect guest-settings` (hidden): inside a guest of the VM runner,
//! the settings of a configuration's spec (`spec.system`) made on the far
//! NIC of `--vm-net pair`, in its own network namespace, before the run;
//! the near NIC is set by the run's own bench. They are left made: the
//! guest is thrown away after its runs, and every configuration of an
//! experiment sets the same keys.

use crate::cli::GuestSettingsArgs;
use crate::exit::{self, Code, InputError};
use crate::output;
use run_record::spec::RunSpec;

pub fn run(args: &GuestSettingsArgs) -> exit::Result<Code> {
    let text = std::fs::read(&args.spec_file)
        .map_err(|err| InputError(format!("cannot read {}: {err}", args.spec_file.display())))?;
    let spec: RunSpec = serde_json::from_slice(&text).map_err(|err| {
        InputError(format!(
            "{} is not a test spec: {err}",
            args.spec_file.display()
        ))
    })?;
    let Some(settings) = spec.system.filter(|settings| !settings.is_empty()) else {
        return Ok(Code::Ok);
    };
    let applied = bench_core::host::settings::apply(&args.interface, &settings)?;
    let outcome = applied.keep();
    for refused in outcome.refused() {
        output::note(&format!(
            "warning: the peer's {} did not grant {refused}",
            args.interface
        ));
    }
    Ok(Code::Ok)
}
