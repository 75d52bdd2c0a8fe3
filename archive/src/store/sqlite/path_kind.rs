//! What a path given as an archive file is, when it is not a regular
//! file SQLite can keep an archive in: a directory, a device, a FIFO, a
//! socket or a file the kernel makes up, each refused by name before
//! SQLite reports it as an I/O error, a full disk or a foreign database.

use crate::error::ArchiveError;
use std::path::Path;

/// File systems whose files the kernel makes up as they are read
/// (`statfs(2)`'s magic numbers): procfs, sysfs, debugfs, tracefs,
/// securityfs, configfs, cgroup and cgroup2, efivarfs, bpf.
const PSEUDO_FILE_SYSTEMS: [u64; 10] = [
    0x9fa0,
    0x6265_6572,
    0x6462_6720,
    0x7472_6163,
    0x7363_6673,
    0x6265_6570,
    0x0027_e0eb,
    0x6367_7270,
    0xde5e_81e4,
    0xcafe_4a11,
];

/// What `path` is when it is there and not a regular file SQLite can
/// keep an archive in: refused by name before SQLite reports it as an
/// I/O error, a full disk or a foreign database.
pub(super) fn refuse_what_is_not_a_file(path: &Path) -> Result<(), ArchiveError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(metadata) = std::fs::metadata(path) else {
        // Absent (or not reachable): the open says which.
        return Ok(());
    };
    let file_type = metadata.file_type();
    let kind = if file_type.is_dir() {
        "a directory"
    } else if file_type.is_char_device() {
        "a character device"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if rustix::fs::statfs(path)
        .is_ok_and(|fs| PSEUDO_FILE_SYSTEMS.contains(&(fs.f_type as u64)))
    {
        "a file the kernel makes up (a pseudo-file)"
    } else {
        return Ok(());
    };
    Err(ArchiveError::NotAFile {
        path: path.to_path_buf(),
        kind,
    })
}
