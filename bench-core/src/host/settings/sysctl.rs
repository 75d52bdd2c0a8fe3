//! Sysctls by dotted name, read and written as files under a `/proc/sys`
//! tree (`net.core.rmem_max` is `net/core/rmem_max`), as sysctl(8) does.
//!
//! A sysctl is opened once, to read and write, before anything changes:
//! a user who may not write it is refused then, and the open file stays
//! the sysctl of the network namespace it was opened in (what
//! /proc/sys/net shows depends on the opening thread's namespace), so
//! that putting the value back acts on the same one from any thread.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Longest value read back; the longest sysctl a person sets is far
/// shorter.
const MAX_VALUE_BYTES: u64 = 64 * 1024;

/// Where `name` lives under `root`; `None` when `name` is not a dotted
/// sysctl name, so that no name can reach outside the tree.
pub(super) fn path(root: &Path, name: &str) -> Option<PathBuf> {
    run_record::spec::is_sysctl_name(name).then(|| root.join(name.replace('.', "/")))
}

/// Opens the sysctl at `path` to read and write it, creating nothing.
pub(super) fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

/// The value of `file`, read from its start, its whitespace folded to
/// single spaces as sysctl(8) prints it (the kernel separates the numbers
/// of a vector with tabs).
pub(super) fn read(file: &File) -> io::Result<String> {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let offset = bytes.len() as u64;
        if offset >= MAX_VALUE_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "longer than any sysctl value",
            ));
        }
        match file.read_at(&mut chunk, offset) {
            Ok(0) => break,
            Ok(n_read) => bytes.extend_from_slice(&chunk[..n_read]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))?;
    Ok(fold_whitespace(&text))
}

/// Writes `value` to `file` at its start, in one write, as the kernel
/// takes a sysctl.
pub(super) fn write(file: &File, value: &str) -> io::Result<()> {
    file.write_all_at(format!("{value}\n").as_bytes(), 0)
}

/// `text` with every run of whitespace made one space, and trimmed.
pub(super) fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_map_to_paths_inside_the_tree() {
        let root = Path::new("/proc/sys");
        assert_eq!(
            path(root, "net.core.rmem_max"),
            Some(PathBuf::from("/proc/sys/net/core/rmem_max"))
        );
        assert_eq!(
            path(root, "net.ipv4.conf.veth-a.forwarding"),
            Some(PathBuf::from("/proc/sys/net/ipv4/conf/veth-a/forwarding"))
        );
        for bad in ["net..x", "../etc", "net/core", "rmem_max", "net.core.", ""] {
            assert_eq!(path(root, bad), None, "{bad}");
        }
    }

    #[test]
    fn values_are_read_folded_and_written_at_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("net/ipv4/tcp_rmem");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "4096\t131072\t6291456\n").unwrap();
        let file = open(&path).unwrap();
        assert_eq!(read(&file).unwrap(), "4096 131072 6291456");
        write(&file, "4096 87380 6291450").unwrap();
        assert_eq!(read(&file).unwrap(), "4096 87380 6291450");
        // Nothing is created for a sysctl that is not there.
        let missing = dir.path().join("net/core/no_such");
        assert_eq!(open(&missing).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert!(!missing.exists());
        // A value too long to be one is not read whole.
        std::fs::write(&path, vec![b'1'; 70_000]).unwrap();
        assert_eq!(read(&file).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
