//! What of this host a guest sees. Its root is assembled at each boot
//! instead of being this host's `/`: a tmpfs holding a small `/etc`
//! written here, this host's `/usr` and those of its `/bin`, `/sbin`
//! and `/lib*` that are directories (each shared read-only over 9p; on a
//! merged-usr host they are links into `/usr`, made again in the guest),
//! and the directories named with `--vm-share`, read-only at the same
//! path. Nothing else of this host is shared: no `/home`, `/root`,
//! `/var`, `/srv`, `/tmp` nor the rest of `/etc`, so that a kernel or a
//! userspace from an untrusted commit range reads none of the user's
//! files, tokens or passwords. The netbisect binary reaches the guest
//! through its input directory (see [`super::guest_dir`]), the modules
//! of the guest's kernel through `/usr/lib/modules` (or `/lib/modules`
//! where `/lib` is a directory of its own).
//!
//! `/etc` holds what the guest's tools look up: `passwd` and `group`
//! with root and nobody, `hosts` with localhost, an `nsswitch.conf` that
//! reads only those files, `mtab`, and two indexes of `/usr` copied from
//! this host: `ld.so.cache` (where the dynamic linker finds libraries)
//! and the links of `/etc/alternatives` (where Debian's `awk`, `nc` and
//! the like lead).

use super::VmError;
use std::path::{Path, PathBuf};

/// The most directories `--vm-share` may name: each is a PCI device of
/// the guest.
pub const MAX_SHARES: usize = 8;

/// Largest `ld.so.cache` copied into the guest's `/etc`, bytes.
const MAX_LD_CACHE_BYTES: u64 = 16 << 20;
/// Most links of `/etc/alternatives` copied into the guest's `/etc`.
const MAX_ALTERNATIVES: usize = 4096;

/// The guest's `/etc/passwd`, `group`, `hosts` and `nsswitch.conf`.
const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n\
                      nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n";
const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";
const HOSTS: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
const NSSWITCH: &str = "passwd: files\ngroup: files\nshadow: files\nhosts: files\n\
                        networks: files\nprotocols: files\nservices: files\n";

/// A directory of this host the guest mounts read-only over 9p, at the
/// same path.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedDir {
    /// Its path, on this host and in the guest.
    pub path: PathBuf,
    /// Its 9p tag.
    pub tag: String,
    /// Part of the guest's root (`/usr`, `/lib`...), not a `--vm-share`.
    pub system: bool,
}

/// An entry of the guest's root written into the initramfs, by its path
/// below the root.
#[derive(Clone, Debug, PartialEq)]
pub enum RootEntry {
    /// A directory, with its permission bits.
    Dir(String, u32),
    /// A regular file, mode 0644.
    File(String, Vec<u8>),
    /// A symbolic link to the target.
    Link(String, String),
}

/// The guest's root: what is written into it and what is mounted on it.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestRoot {
    /// The entries written, parents before children.
    pub entries: Vec<RootEntry>,
    /// The directories mounted read-only over 9p, in order.
    pub mounts: Vec<SharedDir>,
}

impl GuestRoot {
    /// The root of a guest on this host, with `shares` (checked by
    /// [`check_shares`]) mounted last.
    pub fn of_this_host(shares: &[PathBuf]) -> GuestRoot {
        let mut root = assemble(Path::new("/"), shares);
        root.entries.extend(copied_indexes(Path::new("/etc")));
        root
    }
}

/// The root made of `host`'s top directories (`host` is `/` but for
/// tests): `/usr` shared, `bin`, `sbin`, `lib*` shared when directories
/// and made again when links, empty directories where the guest mounts
/// its own file systems, the generated `/etc`.
fn assemble(host: &Path, shares: &[PathBuf]) -> GuestRoot {
    let mut entries = Vec::new();
    for (dir, mode) in [
        ("etc", 0o755),
        ("usr", 0o755),
        ("proc", 0o555),
        ("sys", 0o555),
        ("dev", 0o755),
        ("run", 0o755),
        ("tmp", 0o1777),
        ("var", 0o755),
        ("var/tmp", 0o1777),
        ("root", 0o700),
    ] {
        entries.push(RootEntry::Dir(dir.to_string(), mode));
    }
    // Where `ip netns` and others look for /run under its older name.
    entries.push(RootEntry::Link("var/run".to_string(), "/run".to_string()));
    for (name, text) in [
        ("etc/passwd", PASSWD),
        ("etc/group", GROUP),
        ("etc/hosts", HOSTS),
        ("etc/nsswitch.conf", NSSWITCH),
    ] {
        entries.push(RootEntry::File(name.to_string(), text.as_bytes().to_vec()));
    }
    entries.push(RootEntry::Link(
        "etc/mtab".to_string(),
        "/proc/self/mounts".to_string(),
    ));
    let mut mounts = vec![SharedDir {
        path: PathBuf::from("/usr"),
        tag: "nbsys0".to_string(),
        system: true,
    }];
    for name in top_system_dirs(host) {
        let Ok(meta) = std::fs::symlink_metadata(host.join(&name)) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(host.join(&name)) {
                entries.push(RootEntry::Link(name, target.to_string_lossy().into_owned()));
            }
        } else if meta.is_dir() {
            entries.push(RootEntry::Dir(name.clone(), 0o755));
            mounts.push(SharedDir {
                path: Path::new("/").join(&name),
                tag: format!("nbsys{}", mounts.len()),
                system: true,
            });
        }
    }
    for (idx, path) in shares.iter().enumerate() {
        mounts.push(SharedDir {
            path: path.clone(),
            tag: format!("nbshare{idx}"),
            system: false,
        });
    }
    GuestRoot { entries, mounts }
}

/// `bin`, `sbin` and every `lib*` at the top of `host`, sorted.
fn top_system_dirs(host: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(host)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name == "bin" || name == "sbin" || name.starts_with("lib"))
        .collect();
    names.sort();
    names
}

/// The indexes of `/usr` kept in `etc`: its `ld.so.cache` when it is a
/// regular file of a sane size, and the links of its `alternatives`.
fn copied_indexes(etc: &Path) -> Vec<RootEntry> {
    let mut entries = Vec::new();
    let cache = etc.join("ld.so.cache");
    let regular = std::fs::symlink_metadata(&cache)
        .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_LD_CACHE_BYTES);
    if regular && let Ok(bytes) = std::fs::read(&cache) {
        entries.push(RootEntry::File("etc/ld.so.cache".to_string(), bytes));
    }
    let Ok(alternatives) = std::fs::read_dir(etc.join("alternatives")) else {
        return entries;
    };
    entries.push(RootEntry::Dir("etc/alternatives".to_string(), 0o755));
    let mut links: Vec<(String, String)> = alternatives
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let target = std::fs::read_link(entry.path()).ok()?;
            Some((name, target.to_string_lossy().into_owned()))
        })
        .filter(|(name, _)| !name.contains('/'))
        .take(MAX_ALTERNATIVES)
        .collect();
    links.sort();
    entries.extend(
        links
            .into_iter()
            .map(|(name, target)| RootEntry::Link(format!("etc/alternatives/{name}"), target)),
    );
    entries
}

/// Checks the directories of `--vm-share` before anything boots: each
/// an existing directory other than `/`, at most [`MAX_SHARES`] of
/// them; returns them as the guest mounts them (absolute, links
/// resolved).
pub fn check_shares(shares: &[PathBuf]) -> Result<Vec<PathBuf>, VmError> {
    if shares.len() > MAX_SHARES {
        return Err(VmError::BadOption(format!(
            "--vm-share is given {} times, over the {MAX_SHARES} a guest takes",
            shares.len()
        )));
    }
    let mut checked = Vec::new();
    for share in shares {
        let bad = |why: String| {
            VmError::BadOption(format!("invalid --vm-share {}: {why}", share.display()))
        };
        let path = std::fs::canonicalize(share).map_err(|err| bad(err.to_string()))?;
        if !path.is_dir() {
            return Err(bad("not a directory".to_string()));
        }
        if path == Path::new("/") {
            return Err(bad(
                "the whole root is not shared; name the directories the test needs".to_string(),
            ));
        }
        // The guest's own file systems are mounted there.
        if ["/proc", "/sys", "/dev", "/run/netbisect"]
            .iter()
            .any(|own| path.starts_with(own))
        {
            return Err(bad(
                "the guest mounts its own file systems there".to_string()
            ));
        }
        checked.push(path);
    }
    Ok(checked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(root: &GuestRoot) -> Vec<String> {
        root.entries
            .iter()
            .map(|entry| match entry {
                RootEntry::Dir(name, _) | RootEntry::File(name, _) => name.clone(),
                RootEntry::Link(name, target) => format!("{name} -> {target}"),
            })
            .collect()
    }

    #[test]
    fn the_root_shares_usr_and_the_system_dirs_that_are_not_links() {
        let host = tempfile::tempdir().unwrap();
        for dir in [
            "usr/bin",
            "usr/lib",
            "lib32",
            "home/user",
            "etc",
            "var",
            "root",
        ] {
            std::fs::create_dir_all(host.path().join(dir)).unwrap();
        }
        std::os::unix::fs::symlink("usr/bin", host.path().join("bin")).unwrap();
        std::os::unix::fs::symlink("usr/lib", host.path().join("lib")).unwrap();
        std::fs::write(host.path().join("etc/shadow"), b"root:secret").unwrap();
        let root = assemble(host.path(), &[PathBuf::from("/opt/tool")]);
        let mounts: Vec<(String, &str, bool)> = root
            .mounts
            .iter()
            .map(|dir| (dir.path.display().to_string(), dir.tag.as_str(), dir.system))
            .collect();
        assert_eq!(
            mounts,
            [
                ("/usr".to_string(), "nbsys0", true),
                ("/lib32".to_string(), "nbsys1", true),
                ("/opt/tool".to_string(), "nbshare0", false),
            ]
        );
        let names = names(&root);
        assert!(names.contains(&"bin -> usr/bin".to_string()), "{names:?}");
        assert!(names.contains(&"lib -> usr/lib".to_string()), "{names:?}");
        assert!(names.contains(&"lib32".to_string()), "{names:?}");
        assert!(names.contains(&"etc/passwd".to_string()), "{names:?}");
        // Nothing of the host's /etc, /home, /var or /root is taken.
        for absent in ["etc/shadow", "home", "home/user"] {
            assert!(!names.contains(&absent.to_string()), "{names:?}");
        }
        // Parents come before their children.
        for (idx, name) in names.iter().enumerate() {
            let name = name.split(" -> ").next().unwrap();
            if let Some((parent, _)) = name.rsplit_once('/') {
                assert!(
                    names[..idx].iter().any(|earlier| earlier == parent),
                    "{name}"
                );
            }
        }
    }

    #[test]
    fn the_indexes_of_etc_are_copied_and_nothing_else() {
        let etc = tempfile::tempdir().unwrap();
        std::fs::write(etc.path().join("ld.so.cache"), b"cache").unwrap();
        std::fs::write(etc.path().join("shadow"), b"root:secret").unwrap();
        std::fs::create_dir(etc.path().join("alternatives")).unwrap();
        std::os::unix::fs::symlink("/usr/bin/mawk", etc.path().join("alternatives/awk")).unwrap();
        let entries = copied_indexes(etc.path());
        assert_eq!(
            entries,
            [
                RootEntry::File("etc/ld.so.cache".to_string(), b"cache".to_vec()),
                RootEntry::Dir("etc/alternatives".to_string(), 0o755),
                RootEntry::Link(
                    "etc/alternatives/awk".to_string(),
                    "/usr/bin/mawk".to_string()
                ),
            ]
        );
        // A link planted as the cache is not followed.
        let etc = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/etc/shadow", etc.path().join("ld.so.cache")).unwrap();
        assert!(copied_indexes(etc.path()).is_empty());
    }

    #[test]
    fn shares_are_directories_below_the_root_and_few() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let checked = check_shares(&[dir.path().join(".")]).unwrap();
        assert_eq!(checked, [std::fs::canonicalize(dir.path()).unwrap()]);
        for (bad, why) in [
            (file.clone(), "not a directory"),
            (PathBuf::from("/"), "the whole root"),
            (PathBuf::from("/proc/self"), "its own file systems"),
            (dir.path().join("missing"), "No such file"),
        ] {
            let err = check_shares(&[bad]).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
        let many = vec![dir.path().to_path_buf(); MAX_SHARES + 1];
        let err = check_shares(&many).unwrap_err().to_string();
        assert!(err.contains("over the 8"), "{err}");
    }
}
