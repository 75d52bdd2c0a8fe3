//! The host's side of one boot: a temporary directory, this user's only
//! (0700), holding what the guest reads (its input directory, shared
//! read-only: the netbisect binary, the guest script, the specs, a
//! token), what it writes (its output directory), the initramfs and the
//! console log; reading back what the guest wrote; and the bounds of what
//! it may leave on this host.
//!
//! The guest is not trusted: nothing of the host's is reachable through a
//! directory it may write (the binary is linked only into the read-only
//! input); qemu keeps the modes the guest gives its files apart from the
//! files (see [`super::qemu`]), so that on this host they are this user's
//! 0600 whatever the guest made; what it wrote is opened without
//! following links, only as a regular file (in the guest's eyes too),
//! and read up to a cap, so that a link to a device or a file of the
//! host, a FIFO or an endless file cannot make the host read what it
//! should not or forever. What the bytes read say is
//! `run_record::guest`'s to tell (the fuzz target `guest_output` feeds
//! it anything). What the guest holds on this host, its output directory
//! and its console log, is measured while it runs and bounded
//! ([`MAX_OUTPUT_BYTES`], [`MAX_OUTPUT_ENTRIES`]); the files of a run are
//! removed once the run is handed over, so that the bound holds for a
//! job of any length.

use super::guest_root::GuestRoot;
use super::script::{PLAN_FILE, guest_script, run_file};
use super::{GUEST_DIR, GuestJob, KernelImage, NetMode, RunOutput, VmError, VmOptions, busybox};
use super::{initramfs, io};
use run_record::guest::{self, RunStatus};
use rustix::fs::{FileType, Mode, OFlags};
use std::io::Read;
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};

/// The name of the netbisect binary in the input directory.
const GUEST_BINARY: &str = "netbisect";
/// Largest record a guest's run may leave, bytes.
pub(super) const MAX_RECORD_BYTES: u64 = 64 << 20;
/// Largest message (stderr, a status, a setup error) read back, bytes.
pub(super) const MAX_MESSAGE_BYTES: u64 = 64 << 10;
/// Most bytes the guest may hold on this host at once, in its output
/// directory and console log together: a few records of the largest
/// size, since each run's files go once it is handed over.
pub(super) const MAX_OUTPUT_BYTES: u64 = 4 * MAX_RECORD_BYTES;
/// Most files and directories the guest may make in its output
/// directory (a run leaves three).
pub(super) const MAX_OUTPUT_ENTRIES: u64 = 10_000;
/// Where qemu's mapped-file model keeps the modes and owners the guest
/// gave the files of a directory: one file each, of lines such as
/// `virtfs.mode=33188`.
const GUEST_MODES_DIR: &str = ".virtfs_metadata";
/// Largest file of [`GUEST_MODES_DIR`] read, bytes.
const MAX_GUEST_MODES_BYTES: u64 = 4096;

/// The prefix of a boot's temporary directory.
const WORK_PREFIX: &str = "netbisect-vm-";
/// The file in a boot's directory that its owner holds locked while it
/// lives: a directory whose lock can be taken belongs to a run that died
/// without removing it (kill -9), and the next run removes it.
const LOCK_FILE: &str = "owner.lock";
/// How old a boot's directory without a lock file must be to be taken for
/// one whose run died before it made the lock.
const UNLOCKED_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// The directories and files of one boot, removed when dropped.
pub(super) struct GuestDir {
    /// The guest's root: what of this host it sees.
    pub(super) root: GuestRoot,
    /// Held locked while this run lives; see [`LOCK_FILE`].
    _lock: std::fs::File,
    /// Removed with everything in it when dropped.
    _work: tempfile::TempDir,
    /// What the guest reads: shared read-only.
    pub(super) input: PathBuf,
    /// What the guest writes.
    pub(super) output: PathBuf,
    /// The initramfs.
    pub(super) initrd: PathBuf,
    /// The console log.
    pub(super) console: PathBuf,
}

/// Where the guest sees its input and output directories.
pub(super) fn guest_dirs() -> (PathBuf, PathBuf) {
    let base = Path::new(GUEST_DIR);
    (base.join("in"), base.join("out"))
}

impl GuestDir {
    /// Writes what the guest needs: `job`'s files, the netbisect binary,
    /// the guest script and the initramfs.
    pub(super) fn prepare(
        image: &KernelImage,
        options: &VmOptions,
        job: &GuestJob,
    ) -> Result<GuestDir, VmError> {
        remove_abandoned(&std::env::temp_dir());
        // This user's only: what the guest wrote is not for others to
        // read or run, even before it is checked.
        let work = tempfile::Builder::new()
            .prefix(WORK_PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(io("create the directories shared with the guest"))?;
        let lock = std::fs::File::create(work.path().join(LOCK_FILE))
            .map_err(io("create the lock of the guest's directories"))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |err| VmError::Io {
                what: "lock the guest's directories".to_string(),
                source: err.into(),
            },
        )?;
        // The guest sees `input` and `output` only; the initramfs and the
        // console stay beside them.
        let input = work.path().join("input");
        let output = work.path().join("output");
        for dir in [&input, &output] {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .map_err(io("create the directories shared with the guest"))?;
        }
        for (name, bytes) in &job.files {
            // Only for this user (and the guest, which runs as root): the
            // host mode's token is one of them.
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(input.join(name))
                .map_err(io(format!("create {name}")))?;
            std::io::Write::write_all(&mut file, bytes).map_err(io(format!("write {name}")))?;
        }
        // The guest's root holds nothing of where the binary was built or
        // installed (a home, a target directory of mode 0700, /tmp): it
        // runs the binary from its input directory, which it may only
        // read, so a link to the host's binary is safe there.
        place_binary(&job.binary, &input.join(GUEST_BINARY))?;
        let (guest_input, guest_output) = guest_dirs();
        let job = &GuestJob {
            binary: guest_input.join(GUEST_BINARY),
            ..job.clone()
        };
        let (script, plan) = guest_script(&guest_input, &guest_output, options, job);
        std::fs::write(input.join("guest.sh"), script).map_err(io("write the guest script"))?;
        let plan = serde_json::to_vec(&plan).map_err(|err| VmError::Io {
            what: "write the guest's plan".to_string(),
            source: std::io::Error::other(err),
        })?;
        std::fs::write(input.join(PLAN_FILE), plan).map_err(io("write the guest's plan"))?;
        let initrd = work.path().join("initramfs.cpio");
        let busybox = busybox()?;
        let root = GuestRoot::of_this_host(&options.shares);
        // The power-off takes the guest's devices, /usr's share with
        // them, while the shell waits: a sleep it can no longer start must
        // not end init (a panic, whose trace would fill the console's
        // tail), hence the loop of the shell's own.
        let command = format!(
            "sh {}/guest.sh; echo o > /proc/sysrq-trigger; sleep 30 || while :; do :; done",
            guest_input.display()
        );
        initramfs::write(
            &initramfs::Contents {
                busybox: &busybox,
                release: image.release.as_deref(),
                nics: options.net != NetMode::Loopback,
                root: &root,
                input_dir: &guest_input.to_string_lossy(),
                output_dir: &guest_output.to_string_lossy(),
                command: &command,
            },
            &initrd,
        )?;
        let console = work.path().join("console.log");
        Ok(GuestDir {
            root,
            _lock: lock,
            _work: work,
            input,
            output,
            initrd,
            console,
        })
    }

    /// What the guest wrote under `name`: `None` when it wrote nothing
    /// there, an error when it left something other than a file or more
    /// than `cap` bytes.
    pub(super) fn read(&self, name: &str, cap: u64) -> Result<Option<Vec<u8>>, VmError> {
        read_guest_file(&self.output, name, cap)
    }

    /// Removes run `run_idx`'s files once it is handed over, with the
    /// modes qemu kept of them: nothing reads them again, and what the
    /// guest holds on this host stays within its bound however many runs
    /// it makes.
    pub(super) fn discard_run(&self, run_idx: usize) {
        for stem in ["record", "err", "status"] {
            let name = run_file(stem, run_idx);
            let _ = std::fs::remove_file(self.output.join(&name));
            let _ = std::fs::remove_file(self.output.join(GUEST_MODES_DIR).join(&name));
        }
    }

    /// Checks what the guest holds on this host, its output directory and
    /// its console log, against [`MAX_OUTPUT_BYTES`] and
    /// [`MAX_OUTPUT_ENTRIES`].
    pub(super) fn check_bounds(&self) -> Result<(), VmError> {
        check_held(
            &self.output,
            &self.console,
            MAX_OUTPUT_BYTES,
            MAX_OUTPUT_ENTRIES,
        )
    }

    /// Whether the guest has marked `name` written (a status file).
    pub(super) fn has(&self, name: &str) -> bool {
        std::fs::symlink_metadata(self.output.join(name)).is_ok()
    }

    /// Run `run_idx`'s outcome, once its status is there: the record, or
    /// why there is none.
    pub(super) fn finished_run(&self, run_idx: usize) -> Result<Option<RunOutput>, VmError> {
        let Some(status) = self.read(&run_file("status", run_idx), MAX_MESSAGE_BYTES)? else {
            return Ok(None);
        };
        match guest::run_status(&status) {
            RunStatus::Passed => {
                let record = self
                    .read(&run_file("record", run_idx), MAX_RECORD_BYTES)?
                    .unwrap_or_default();
                Ok(Some(RunOutput::Record(record)))
            }
            RunStatus::Failed(status) => {
                let stderr = self
                    .read(&run_file("err", run_idx), MAX_MESSAGE_BYTES)?
                    .unwrap_or_default();
                Ok(Some(RunOutput::Failed(guest::failure_message(
                    &status, &stderr,
                ))))
            }
        }
    }
}

/// Removes the boot directories in `temp` that runs of this user left
/// when they died: those whose lock nobody holds, and those without a
/// lock made over a minute ago. A link is never followed.
fn remove_abandoned(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(WORK_PREFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_dir() || meta.uid() != me {
            continue;
        }
        let abandoned = match rustix::fs::open(
            path.join(LOCK_FILE),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            // Taken: its owner is gone (the lock goes with the process).
            // The lock is held until the directory is removed, so that
            // two runs cleaning at once do not step on each other.
            Ok(fd) => rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
                .is_ok()
                .then_some(Some(fd)),
            Err(rustix::io::Errno::NOENT) => meta
                .modified()
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > UNLOCKED_GRACE)
                .then_some(None),
            Err(_) => None,
        };
        if let Some(_held) = abandoned {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// Checks what a guest holds on this host, `output` and `console`,
/// against `max_bytes` and `max_entries`.
fn check_held(
    output: &Path,
    console: &Path,
    max_bytes: u64,
    max_entries: u64,
) -> Result<(), VmError> {
    let console = std::fs::symlink_metadata(console)
        .map(|meta| held_bytes(&meta))
        .unwrap_or(0);
    let (bytes, entries) = usage(output, max_entries);
    if entries > max_entries {
        return Err(VmError::OutputLimit {
            limit: format!("{max_entries} files"),
            what: "in its output directory",
        });
    }
    if bytes.saturating_add(console) > max_bytes {
        return Err(VmError::OutputLimit {
            limit: format!("{} MiB", max_bytes >> 20),
            what: "written to this host (its output directory and console log together)",
        });
    }
    Ok(())
}

/// The bytes a file or directory takes: its length, or its blocks where
/// more (a file the guest grew with holes is counted at its length).
fn held_bytes(meta: &std::fs::Metadata) -> u64 {
    meta.len().max(meta.blocks().saturating_mul(512))
}

/// The bytes and the entries under `dir`, links not followed; the count
/// stops past `max_entries`.
fn usage(dir: &Path, max_entries: u64) -> (u64, u64) {
    let (mut bytes, mut entries) = (0u64, 0u64);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(listing) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > max_entries {
                return (bytes, entries);
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            bytes = bytes.saturating_add(held_bytes(&meta));
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    (bytes, entries)
}

/// The type the guest gave `name` in `dir`, where qemu keeps it apart
/// from the file ([`GUEST_MODES_DIR`]): `None` when it kept none.
fn guest_file_type(dir: &Path, name: &str) -> Option<FileType> {
    let fd = rustix::fs::open(
        dir.join(GUEST_MODES_DIR).join(name),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(MAX_GUEST_MODES_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    let mode: u32 = text
        .lines()
        .find_map(|line| line.strip_prefix("virtfs.mode="))?
        .trim()
        .parse()
        .ok()?;
    Some(FileType::from_raw_mode(mode))
}

/// Reads `name` in `dir` as the guest left it: without following a link,
/// only a regular file (in the guest's eyes too), at most `cap` bytes.
fn read_guest_file(dir: &Path, name: &str, cap: u64) -> Result<Option<Vec<u8>>, VmError> {
    let path = dir.join(name);
    let refused = |why: String| VmError::GuestOutput {
        name: name.to_string(),
        why,
    };
    // O_NONBLOCK: a FIFO the guest made opens at once instead of waiting
    // for a writer; it is then refused as not a regular file.
    let fd = match rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(refused("it is a symbolic link".to_string())),
        Err(err) => {
            return Err(VmError::Io {
                what: format!("open {}", path.display()),
                source: err.into(),
            });
        }
    };
    let stat = rustix::fs::fstat(&fd).map_err(|err| VmError::Io {
        what: format!("read {}", path.display()),
        source: err.into(),
    })?;
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => guest_file_type(dir, name).unwrap_or(FileType::RegularFile),
        other => other,
    };
    if kind == FileType::Symlink {
        return Err(refused("it is a symbolic link".to_string()));
    }
    if kind != FileType::RegularFile {
        return Err(refused(format!("it is a {kind:?}, not a regular file")));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(io(format!("read {}", path.display())))?;
    if bytes.len() as u64 > cap {
        return Err(refused(format!("it is over {cap} bytes")));
    }
    Ok(Some(bytes))
}

/// Puts the host's netbisect binary at `to`, in the read-only input
/// directory: a hard link where both are on one file system, else a copy.
fn place_binary(from: &Path, to: &Path) -> Result<(), VmError> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(io(format!("copy {} for the guest", from.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_files_are_read_only_as_regular_files_within_their_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        std::fs::write(path.join("record.json"), b"{}").unwrap();
        assert_eq!(
            read_guest_file(path, "record.json", 16).unwrap(),
            Some(b"{}".to_vec())
        );
        assert_eq!(read_guest_file(path, "missing", 16).unwrap(), None);
        std::fs::write(path.join("big"), vec![b'x'; 17]).unwrap();
        let err = read_guest_file(path, "big", 16).unwrap_err().to_string();
        assert!(err.contains("over 16 bytes"), "{err}");
        std::os::unix::fs::symlink("/dev/zero", path.join("zero")).unwrap();
        let err = read_guest_file(path, "zero", 16).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = read_guest_file(path, "fifo", 16).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        std::fs::create_dir(path.join("dir")).unwrap();
        assert!(read_guest_file(path, "dir", 16).is_err());
    }

    #[test]
    fn what_the_guest_holds_is_bounded_in_bytes_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("output");
        let console = dir.path().join("console.log");
        std::fs::create_dir_all(output.join("sub")).unwrap();
        std::fs::write(output.join("sub/record"), vec![b'x'; 1000]).unwrap();
        std::fs::write(&console, vec![b'x'; 1000]).unwrap();
        assert!(check_held(&output, &console, 1 << 20, 10).is_ok());
        // A file grown with holes counts at its length.
        std::fs::File::create(output.join("sparse"))
            .unwrap()
            .set_len(2 << 20)
            .unwrap();
        let err = check_held(&output, &console, 1 << 20, 10)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the guest passed the limit of 1 MiB written to this host (its output \
             directory and console log together); the VM was stopped"
        );
        std::fs::remove_file(output.join("sparse")).unwrap();
        // The console counts with the output directory.
        std::fs::write(&console, vec![b'x'; 1 << 20]).unwrap();
        assert!(check_held(&output, &console, 1 << 20, 10).is_err());
        std::fs::write(&console, b"").unwrap();
        for idx in 0..10 {
            std::fs::write(output.join(format!("f{idx}")), b"").unwrap();
        }
        let err = check_held(&output, &console, 1 << 20, 10)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "the guest passed the limit of 10 files in its output directory; the VM was stopped"
        );
        assert_eq!(usage(&output, 5).1, 6);
    }

    #[test]
    fn what_the_guest_made_a_link_or_a_fifo_is_refused_though_a_file_here() {
        // As qemu's mapped-file model leaves them: regular files on this
        // host, the guest's types beside them.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        std::fs::create_dir(path.join(GUEST_MODES_DIR)).unwrap();
        for (name, mode) in [("link", 0o120777), ("fifo", 0o010644), ("file", 0o100644)] {
            std::fs::write(path.join(name), b"/dev/zero").unwrap();
            std::fs::write(
                path.join(GUEST_MODES_DIR).join(name),
                format!("virtfs.uid=0\nvirtfs.gid=0\nvirtfs.mode={mode}\n"),
            )
            .unwrap();
        }
        let err = read_guest_file(path, "link", 16).unwrap_err().to_string();
        assert!(err.contains("it is a symbolic link"), "{err}");
        let err = read_guest_file(path, "fifo", 16).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(
            read_guest_file(path, "file", 16).unwrap(),
            Some(b"/dev/zero".to_vec())
        );
    }

    #[test]
    fn directories_of_dead_runs_are_removed_and_no_other() {
        let temp = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let path = temp.path().join(name);
            std::fs::create_dir(&path).unwrap();
            std::fs::write(path.join("kept"), b"x").unwrap();
            path
        };
        let living = dir("netbisect-vm-living");
        let lock = std::fs::File::create(living.join(LOCK_FILE)).unwrap();
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        let dead = dir("netbisect-vm-dead");
        std::fs::File::create(dead.join(LOCK_FILE)).unwrap();
        let starting = dir("netbisect-vm-starting");
        let other = dir("something-else");
        std::fs::File::create(other.join(LOCK_FILE)).unwrap();
        let target = dir("target");
        std::fs::File::create(target.join(LOCK_FILE)).unwrap();
        std::os::unix::fs::symlink(&target, temp.path().join("netbisect-vm-link")).unwrap();

        remove_abandoned(temp.path());
        assert!(!dead.exists());
        for kept in [&living, &starting, &other, &target] {
            assert!(kept.join("kept").exists(), "{}", kept.display());
        }
        assert!(
            std::fs::symlink_metadata(temp.path().join("netbisect-vm-link"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        drop(lock);
        remove_abandoned(temp.path());
        assert!(!living.exists());
    }
}
