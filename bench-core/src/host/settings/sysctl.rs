//! Sysctls by dotted name, read and written as files under a `/proc/sys`
//! tree (`net.core.rmem_max` is `net/core/rmem_max`), as sysctl(8) does.
//! The network sysctls of /proc/sys are those of the calling thread's
//! network namespace.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Where `name` lives under `root`; `None` when `name` is not a dotted
/// sysctl name, so that no name can reach outside the tree.
pub(super) fn path(root: &Path, name: &str) -> Option<PathBuf> {
    run_record::spec::is_sysctl_name(name).then(|| root.join(name.replace('.', "/")))
}

/// The value of the sysctl at `path`, its whitespace folded to single
/// spaces as sysctl(8) prints it (the kernel separates the numbers of a
/// vector with tabs).
pub(super) fn read(path: &Path) -> io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    Ok(fold_whitespace(&text))
}

/// Writes `value` to the sysctl at `path`, in one write as the kernel
/// wants it, without creating anything.
pub(super) fn write(path: &Path, value: &str) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).truncate(true).open(path)?;
    file.write_all(format!("{value}\n").as_bytes())
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
    fn values_are_read_folded_and_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("net/ipv4/tcp_rmem");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "4096\t131072\t6291456\n").unwrap();
        assert_eq!(read(&file).unwrap(), "4096 131072 6291456");
        write(&file, "4096 87380 6291456").unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "4096 87380 6291456\n"
        );
        // Nothing is created for a sysctl that is not there.
        let missing = dir.path().join("net/core/no_such");
        assert_eq!(
            write(&missing, "1").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert!(!missing.exists());
        assert_eq!(read(&missing).unwrap_err().kind(), io::ErrorKind::NotFound);
    }
}
