//! Bench tests in a VM, for `bench --kernel`, `ab` and bisect's kernel
//! steps: the kernel checked before anything boots
//! ([`KernelUnderTest::prepare`]), then [`run_tests`]: the resolved specs
//! handed to the guest as files of its input directory (`bench
//! --spec-file`), the host mode's server started here for the boot, each
//! guest record read back as its run finishes, checked to be of that run,
//! given the `vm` section and sealed again. [`run_test`] is one run.
//! Storing the records is the caller's business.

use super::{GuestEvents, GuestJob, GuestRun, KernelImage, NetMode, RunOutput, VmError, VmOptions};
use crate::exit::{self, Context, InputError};
use bench_core::run::BenchRequest;
use bench_core::server::{self, Server, ServerConfig};
use run_record::env::VmEnv;
use run_record::guest::AskedRun;
use run_record::record::RunRecord;
use run_record::spec::RunSpec;
use std::io::Write;
use std::path::Path;

/// A kernel ready to boot: checked image, options, and the tools found.
pub struct KernelUnderTest {
    /// The image.
    pub image: KernelImage,
    /// How its VM is made.
    pub options: VmOptions,
}

impl KernelUnderTest {
    /// Checks everything a boot needs, before anything boots: the
    /// options, the image, the runner's programs and the kernel's
    /// features.
    pub fn prepare(image: &Path, options: VmOptions) -> exit::Result<KernelUnderTest> {
        super::check_nic_options(&options)?;
        let image = super::check_image(image, options.net)?;
        super::check_command_line(&image, &options)?;
        super::check_tools()?;
        super::check_shares(&options.shares)?;
        if let Some(tap) = &options.tap {
            super::tap_link(tap)?;
        }
        Ok(KernelUnderTest { image, options })
    }
}

/// What the guest's bench is told of its run: without a commit the guest
/// takes it from its kernel's release; without a testbed the run's is
/// named after the network mode (`vm-pair`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GuestSubject {
    /// The commit under test.
    pub commit: Option<String>,
    /// The run's label.
    pub label: Option<String>,
    /// The testbed name.
    pub testbed: Option<String>,
}

/// What the runner tells on stderr.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Notes {
    /// Only errors.
    pub quiet: bool,
    /// More detail.
    pub verbose: bool,
}

/// What became of one run of a boot.
pub type TestOutcome = Result<RunRecord, String>;

/// Boots `kernel` once, runs the test of each spec in `specs` inside, in
/// order, and hands each sealed record (with its `vm` section), or why
/// there is none, to `finished` as soon as the guest has finished it: a
/// guest that dies loses only what it had not finished. A record is taken
/// only when it is of the run asked (its spec, testbed, label and, when
/// given, commit). Failed guests leave their console in `console_dir`.
/// Returns the `vm` section of the boot; an error from `finished` stops
/// nothing but is returned once the guest is done.
pub fn run_tests(
    kernel: &KernelUnderTest,
    specs: &[RunSpec],
    subject: &GuestSubject,
    console_dir: &Path,
    notes: Notes,
    finished: &mut dyn FnMut(usize, TestOutcome) -> exit::Result<()>,
) -> exit::Result<VmEnv> {
    let binary = std::env::current_exe().context("cannot find the netbisect binary")?;
    let testbed = subject
        .testbed
        .clone()
        .unwrap_or_else(|| format!("vm-{}", kernel.options.net.name()));
    let mut files = Vec::new();
    let mut runs = Vec::new();
    for (run_idx, spec) in specs.iter().enumerate() {
        let name = format!("spec-{run_idx:03}.json");
        files.push((
            name.clone(),
            serde_json::to_vec(spec).context("failed to encode the test spec")?,
        ));
        let mut bench_args = vec![
            "--spec-file".to_string(),
            format!("{{input}}/{name}"),
            "--testbed".to_string(),
            testbed.clone(),
        ];
        if let Some(commit) = &subject.commit {
            bench_args.extend(["--commit".to_string(), commit.clone()]);
        }
        if let Some(label) = &subject.label {
            bench_args.extend(["--label".to_string(), label.clone()]);
        }
        let has_settings = spec
            .system
            .as_ref()
            .is_some_and(|system| !system.is_empty());
        runs.push(GuestRun {
            bench_args,
            peer_settings: has_settings.then_some(name),
        });
    }
    let ipv6 = specs
        .iter()
        .any(|spec| spec.family == run_record::spec::AddressFamily::Ipv6);
    // The host mode's server runs here, on the tap's address, for this
    // one boot, and takes only the guest, which is given its token.
    let host_server = match (kernel.options.net, &kernel.options.tap) {
        (NetMode::Host, Some(tap)) => {
            if ipv6 {
                return Err(InputError("--vm-net host runs over IPv4: drop -6".into()).into());
            }
            let link = super::tap_link(tap)?;
            let (token, token_text) = one_run_token()?;
            files.push(("token".to_string(), token_text));
            let mut config = ServerConfig::new(std::net::SocketAddr::new(link.host.into(), 0));
            config.token = Some(token);
            let server = Server::bind(config, server::quiet())
                .context("cannot start the server for the guest")?;
            let port = server.local_addr().port();
            let handle = server.spawn().context("cannot start the server")?;
            Some((handle, link, port))
        }
        _ => None,
    };
    let job = GuestJob {
        binary,
        runs,
        files,
        host: host_server
            .as_ref()
            .map(|(_, link, port)| (link.clone(), *port)),
        ipv6,
    };
    if notes.verbose {
        eprintln!(
            "netbisect: booting {} (release {}, features checked from {})",
            kernel.image.path.display(),
            kernel.image.release.as_deref().unwrap_or("unknown"),
            kernel.image.features_from
        );
    }
    let mut notify = |text: &str| {
        if !notes.quiet {
            eprintln!("netbisect: {text}");
        }
    };
    let mut handed_over: exit::Result<()> = Ok(());
    let mut on_run = |run_idx: usize, output: RunOutput, vm: &VmEnv| {
        let outcome = match output {
            RunOutput::Record(bytes) => {
                sealed_record(&bytes, vm, &specs[run_idx], &testbed, subject)
            }
            RunOutput::Failed(message) => Err(message),
        };
        if let Err(err) = finished(run_idx, outcome)
            && handed_over.is_ok()
        {
            handed_over = Err(err);
        }
    };
    let outcome = super::run_guest(
        &kernel.image,
        &kernel.options,
        &job,
        console_dir,
        &mut GuestEvents {
            notify: &mut notify,
            finished: &mut on_run,
        },
    );
    if let Some((handle, _, _)) = host_server {
        handle.stop();
    }
    let vm = outcome.with_context(|| format!("testing kernel {}", kernel.image.path.display()))?;
    handed_over?;
    Ok(vm)
}

/// The guest's record of a run, checked to be of that run, with the `vm`
/// section of its guest, sealed again.
fn sealed_record(
    bytes: &[u8],
    vm: &VmEnv,
    spec: &RunSpec,
    testbed: &str,
    subject: &GuestSubject,
) -> TestOutcome {
    let asked = AskedRun {
        spec,
        testbed,
        label: subject.label.as_deref(),
        commit: subject.commit.as_deref(),
    };
    let mut record = run_record::guest::record_of_run(bytes, &asked)?;
    record.env.vm = Some(vm.clone());
    record
        .seal()
        .map_err(|err| format!("failed to seal the run record: {err}"))?;
    Ok(record)
}

/// Boots `kernel`, runs `request`'s test inside, and returns the sealed
/// record with its `vm` section. Failed guests leave their console in
/// `console_dir`.
pub fn run_test(
    kernel: &KernelUnderTest,
    request: &BenchRequest,
    subject: &GuestSubject,
    console_dir: &Path,
    notes: Notes,
) -> exit::Result<RunRecord> {
    let mut outcome = None;
    run_tests(
        kernel,
        std::slice::from_ref(&request.spec),
        subject,
        console_dir,
        notes,
        &mut |_, run| {
            outcome = Some(run);
            Ok(())
        },
    )?;
    match outcome {
        Some(Ok(record)) => Ok(record),
        Some(Err(message)) => Err(exit::Failure::from(VmError::RunFailed(message))
            .context(format!("testing kernel {}", kernel.image.path.display()))),
        None => Err(exit::Failure::msg(format!(
            "the guest gave no outcome of its test (testing kernel {})",
            kernel.image.path.display()
        ))),
    }
}

/// A fresh random token for one run of the host mode, and its text for
/// the guest's token file.
fn one_run_token() -> exit::Result<(bench_core::auth::Token, Vec<u8>)> {
    let text = format!(
        "{}{}\n",
        bench_core::auth::new_challenge()?,
        bench_core::auth::new_challenge()?
    );
    // A token is read from a file only this user may read.
    let dir = tempfile::Builder::new()
        .prefix("netbisect-token-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir()
        .context("cannot create a directory for the guest's token")?;
    let path = dir.path().join("token");
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .context("cannot write the guest's token")?;
        file.write_all(text.as_bytes())
            .context("cannot write the guest's token")?;
    }
    let token = bench_core::auth::Token::from_file(&path)?;
    Ok((token, text.into_bytes()))
}
