//! A bench test in a VM, for `bench --kernel`, `ab` and bisect's kernel
//! steps: the kernel checked before anything boots
//! ([`KernelUnderTest::prepare`]), then [`run_test`]: the resolved spec
//! handed to the guest as a file in the shared directory (`bench
//! --spec-file`), the host mode's one-run server started here, the
//! guest's record read back, given the `vm` section and sealed again.
//! Storing it is the caller's business.

use super::{GuestJob, KernelImage, NetMode, VmOptions};
use crate::exit::InputError;
use anyhow::Context;
use bench_core::run::BenchRequest;
use bench_core::server::{self, Server, ServerConfig};
use run_record::record::RunRecord;
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
    pub fn prepare(image: &Path, options: VmOptions) -> anyhow::Result<KernelUnderTest> {
        let image = super::check_image(image, options.net)?;
        super::check_tools()?;
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

/// Boots `kernel`, runs `request`'s test inside, and returns the sealed
/// record with its `vm` section. Failed guests leave their console in
/// `console_dir`.
pub fn run_test(
    kernel: &KernelUnderTest,
    request: &BenchRequest,
    subject: &GuestSubject,
    console_dir: &Path,
    notes: Notes,
) -> anyhow::Result<RunRecord> {
    let spec = serde_json::to_vec(&request.spec).context("failed to encode the test spec")?;
    let binary = std::env::current_exe().context("cannot find the netbisect binary")?;
    let testbed = subject
        .testbed
        .clone()
        .unwrap_or_else(|| format!("vm-{}", kernel.options.net.name()));
    let mut bench_args = vec![
        "--spec-file".to_string(),
        "{shared}/spec.json".to_string(),
        "--testbed".to_string(),
        testbed,
    ];
    if let Some(commit) = &subject.commit {
        bench_args.extend(["--commit".to_string(), commit.clone()]);
    }
    if let Some(label) = &subject.label {
        bench_args.extend(["--label".to_string(), label.clone()]);
    }
    let mut files = vec![("spec.json".to_string(), spec)];
    // The host mode's server runs here, on the tap's address, for this
    // one run, and takes only the guest, which is given its token.
    let host_server = match (kernel.options.net, &kernel.options.tap) {
        (NetMode::Host, Some(tap)) => {
            if request.spec.family == run_record::spec::AddressFamily::Ipv6 {
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
        bench_args,
        files,
        host: host_server
            .as_ref()
            .map(|(_, link, port)| (link.clone(), *port)),
        ipv6: request.spec.family == run_record::spec::AddressFamily::Ipv6,
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
    let outcome = super::run_guest(
        &kernel.image,
        &kernel.options,
        &job,
        console_dir,
        &mut notify,
    );
    if let Some((handle, _, _)) = host_server {
        handle.stop();
    }
    let result =
        outcome.with_context(|| format!("testing kernel {}", kernel.image.path.display()))?;
    let mut record =
        RunRecord::from_slice(&result.record).context("the guest's run record is not readable")?;
    record.env.vm = Some(result.vm);
    record.seal().context("failed to seal the run record")?;
    Ok(record)
}

/// A fresh random token for one run of the host mode, and its text for
/// the guest's token file.
fn one_run_token() -> anyhow::Result<(bench_core::auth::Token, Vec<u8>)> {
    let text = format!(
        "{}{}\n",
        bench_core::auth::new_challenge()?,
        bench_core::auth::new_challenge()?
    );
    // A token is read from a file only this user may read.
    let dir = tempfile::Builder::new()
        .prefix("netbisect-token-")
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
