//! What an image is before it boots: an x86 bzImage (its setup header
//! names the release), and whether the kernel has what the guest needs
//! (9p to share this host's /usr and the run's files, virtio-net for
//! the NIC modes), read from the host's modules of that release or from
//! the `.config` of the tree it was built in.

use super::{NetMode, VmError};
use std::path::{Path, PathBuf};

/// Offset of the "HdrS" magic of the x86 boot protocol.
const HEADER_MAGIC_OFFSET: usize = 0x202;
/// Offset of the pointer to the kernel version string (boot protocol
/// 2.00+), relative to 0x200.
const VERSION_POINTER_OFFSET: usize = 0x20e;
/// Offset of the count of 512-byte setup sectors (0 means 4).
const SETUP_SECTS_OFFSET: usize = 0x1f1;
/// Offset of the size of the protected-mode code, in 16-byte units.
const SYSSIZE_OFFSET: usize = 0x1f4;
/// Offset of the boot protocol version.
const PROTOCOL_OFFSET: usize = 0x206;
/// Offset of the longest command line the kernel takes (protocol 2.06+).
const CMDLINE_SIZE_OFFSET: usize = 0x238;
/// The longest command line assumed where the header does not say.
const DEFAULT_CMDLINE_MAX: usize = 2048;
/// What is read of an image before its sizes are checked: the setup
/// sectors (at most 255 and the boot sector), which hold the header and
/// the version string it points to.
const HEADER_BYTES: u64 = 128 << 10;
/// The largest image read: a bzImage holds a compressed kernel, and the
/// largest distribution and debug builds are tens of MiB.
pub const MAX_IMAGE_BYTES: u64 = 256 << 20;

/// A kernel image checked before boot.
#[derive(Clone, Debug)]
pub struct KernelImage {
    /// The image.
    pub path: PathBuf,
    /// The release its header names, when it names one.
    pub release: Option<String>,
    /// How its features were known: `modules`, `config` or `unknown`.
    pub features_from: &'static str,
    /// The longest kernel command line it takes, bytes without the
    /// final zero (its setup header's `cmdline_size`).
    pub cmdline_max: usize,
}

#[cfg(test)]
impl KernelImage {
    /// An image that is never booted, for tests of what is planned.
    pub fn for_tests(name: &str) -> KernelImage {
        KernelImage {
            path: PathBuf::from(format!("/boot/vmlinuz-{name}")),
            release: Some(name.to_string()),
            features_from: "unknown",
            cmdline_max: DEFAULT_CMDLINE_MAX,
        }
    }
}

/// A kernel feature the guest needs.
struct Feature {
    /// What it is for, in words.
    what: &'static str,
    /// Module file names (any of them, as built-in or loadable).
    modules: &'static [&'static str],
    /// Config symbols that must be `y` when there are no modules.
    configs: &'static [&'static str],
}

const NINE_P: Feature = Feature {
    what: "9p over virtio (to share this host's /usr and the run's files)",
    modules: &["9p.ko", "9pnet_virtio.ko"],
    configs: &["CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO", "CONFIG_9P_FS"],
};

const VIRTIO_NET: Feature = Feature {
    what: "virtio-net (for the guest's NICs)",
    modules: &["virtio_net.ko"],
    configs: &["CONFIG_VIRTIO_NET"],
};

/// Checks `path` is a kernel image and has what `net` needs. The path
/// is made absolute (qemu runs in another directory), and only the
/// setup header is read: the sizes it states are checked before the
/// image is read whole, at boot.
pub fn check_image(path: &Path, net: NetMode) -> Result<KernelImage, VmError> {
    let path = std::path::absolute(path).map_err(|source| VmError::Io {
        what: format!("find {}", path.display()),
        source,
    })?;
    let path = path.as_path();
    let header = read_header(path)?;
    let bytes = header.as_slice();
    if bytes.get(HEADER_MAGIC_OFFSET..HEADER_MAGIC_OFFSET + 4) != Some(b"HdrS".as_slice()) {
        return Err(VmError::NotAKernel(path.to_path_buf()));
    }
    let release = release_of(bytes);
    let mut needed = vec![&NINE_P];
    if net != NetMode::Loopback {
        needed.push(&VIRTIO_NET);
    }
    let features_from = match &release {
        Some(release) => check_features(path, release, &needed)?,
        None => "unknown",
    };
    Ok(KernelImage {
        path: path.to_path_buf(),
        release,
        features_from,
        cmdline_max: cmdline_max(bytes),
    })
}

/// The first [`HEADER_BYTES`] of the image at `path`, after checking
/// that it is a regular file no larger than [`MAX_IMAGE_BYTES`] and than
/// its header says, give or take a signature.
fn read_header(path: &Path) -> Result<Vec<u8>, VmError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let bad = |why: String| VmError::BadImage {
        path: path.to_path_buf(),
        why,
    };
    // O_NONBLOCK: a FIFO opens at once, to be refused below.
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Err(VmError::NoImage(path.to_path_buf())),
        Err(rustix::io::Errno::LOOP) => {
            return Err(bad("a loop of symbolic links".to_string()));
        }
        Err(rustix::io::Errno::NOTDIR) => {
            return Err(bad("under something that is not a directory".to_string()));
        }
        Err(err) => {
            return Err(VmError::Io {
                what: format!("read {}", path.display()),
                source: err.into(),
            });
        }
    };
    let stat = rustix::fs::fstat(&fd).map_err(|err| VmError::Io {
        what: format!("read {}", path.display()),
        source: err.into(),
    })?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err(bad("a directory".to_string())),
        other => return Err(bad(format!("a {other:?}, not a regular file"))),
    }
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    if size > MAX_IMAGE_BYTES {
        return Err(bad(format!(
            "{size} bytes, over the {} MiB an image may have",
            MAX_IMAGE_BYTES >> 20
        )));
    }
    let mut header = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::from(fd), HEADER_BYTES),
        &mut header,
    )
    .map_err(|source| VmError::Io {
        what: format!("read {}", path.display()),
        source,
    })?;
    if header.get(HEADER_MAGIC_OFFSET..HEADER_MAGIC_OFFSET + 4) == Some(b"HdrS".as_slice())
        && let Some(stated) = stated_size(&header)
        && size < stated
    {
        return Err(bad(format!(
            "cut short: {size} bytes where its header says {stated}"
        )));
    }
    Ok(header)
}

/// The size of a bzImage as its setup header states it: the setup
/// sectors and the boot sector, then the protected-mode code.
fn stated_size(header: &[u8]) -> Option<u64> {
    let sectors = match *header.get(SETUP_SECTS_OFFSET)? {
        0 => 4,
        n => u64::from(n),
    };
    let syssize = header.get(SYSSIZE_OFFSET..SYSSIZE_OFFSET + 4)?;
    let syssize = u32::from_le_bytes([syssize[0], syssize[1], syssize[2], syssize[3]]);
    Some((sectors + 1) * 512 + u64::from(syssize) * 16)
}

/// The longest command line the image takes: `cmdline_size` of its
/// setup header from boot protocol 2.06, else [`DEFAULT_CMDLINE_MAX`].
fn cmdline_max(header: &[u8]) -> usize {
    let protocol = header
        .get(PROTOCOL_OFFSET..PROTOCOL_OFFSET + 2)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]));
    let size = header
        .get(CMDLINE_SIZE_OFFSET..CMDLINE_SIZE_OFFSET + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    match size {
        Some(size) if protocol >= 0x206 && size > 0 => {
            usize::try_from(size).unwrap_or(DEFAULT_CMDLINE_MAX)
        }
        _ => DEFAULT_CMDLINE_MAX,
    }
}

/// The release in the image's version string ("6.1.0-57-amd64 (...) #1").
fn release_of(bytes: &[u8]) -> Option<String> {
    let pointer = bytes.get(VERSION_POINTER_OFFSET..VERSION_POINTER_OFFSET + 2)?;
    let pointer = u16::from_le_bytes([pointer[0], pointer[1]]) as usize;
    if pointer == 0 {
        return None;
    }
    let text = bytes.get(pointer + 0x200..)?;
    let end = text
        .iter()
        .position(|&byte| byte == 0)
        .unwrap_or(text.len());
    let text = std::str::from_utf8(&text[..end.min(256)]).ok()?;
    let release = text.split_whitespace().next()?;
    (!release.is_empty()).then(|| release.to_string())
}

fn check_features(
    image: &Path,
    release: &str,
    needed: &[&Feature],
) -> Result<&'static str, VmError> {
    let modules = Path::new("/lib/modules").join(release);
    if modules.is_dir() {
        let mut listed = String::new();
        for name in ["modules.builtin", "modules.dep"] {
            if let Ok(text) = std::fs::read_to_string(modules.join(name)) {
                listed.push_str(&text);
            }
        }
        let has = |module: &str| {
            listed.lines().any(|line| {
                let path = line.split(':').next().unwrap_or("");
                path.rsplit('/')
                    .next()
                    .is_some_and(|file| file == module || file.starts_with(&format!("{module}.")))
            })
        };
        for feature in needed {
            if let Some(missing) = feature.modules.iter().find(|module| !has(module)) {
                return Err(VmError::KernelLacks {
                    release: release.to_string(),
                    what: feature.what,
                    detail: format!("no {missing} in {}", modules.display()),
                    hint: hint(feature),
                });
            }
        }
        return Ok("modules");
    }
    // A tree built for the guest (`vng --build`) has everything built in
    // and no modules installed; its .config says what is there.
    let Some(config) = config_near(image, release) else {
        return Ok("unknown");
    };
    let text = std::fs::read_to_string(&config).unwrap_or_default();
    for feature in needed {
        for symbol in feature.configs {
            if !text.lines().any(|line| line == format!("{symbol}=y")) {
                return Err(VmError::KernelLacks {
                    release: release.to_string(),
                    what: feature.what,
                    detail: format!(
                        "{symbol} is not built in ({}, and no modules in {})",
                        config.display(),
                        modules.display()
                    ),
                    hint: hint(feature),
                });
            }
        }
    }
    Ok("config")
}

fn hint(feature: &Feature) -> String {
    format!(
        "enable {} (=y, or =m with the modules installed under /lib/modules), \
         or use a kernel flavour that has them (Debian's generic \
         linux-image-*-amd64 has; the cloud flavour lacks 9p); `vng --kconfig` \
         writes a config with everything the guest needs",
        feature.configs.join(", ")
    )
}

/// The .config of the tree an image was built in, or the one installed
/// beside a distribution kernel.
fn config_near(image: &Path, release: &str) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    let mut dir = image.parent();
    for _ in 0..4 {
        let Some(current) = dir else { break };
        candidates.push(current.join(".config"));
        dir = current.parent();
    }
    candidates.push(PathBuf::from(format!("/boot/config-{release}")));
    candidates.into_iter().find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_image(version: &str) -> Vec<u8> {
        let mut bytes = vec![0u8; 0x1000];
        bytes[HEADER_MAGIC_OFFSET..HEADER_MAGIC_OFFSET + 4].copy_from_slice(b"HdrS");
        let pointer: u16 = 0x600;
        bytes[VERSION_POINTER_OFFSET..VERSION_POINTER_OFFSET + 2]
            .copy_from_slice(&pointer.to_le_bytes());
        let at = pointer as usize + 0x200;
        bytes[at..at + version.len()].copy_from_slice(version.as_bytes());
        bytes
    }

    #[test]
    fn the_release_comes_from_the_setup_header() {
        let bytes = fake_image("6.9.0-rc1-00042-gabcdef123456 (me@box) #3 SMP");
        assert_eq!(
            release_of(&bytes).as_deref(),
            Some("6.9.0-rc1-00042-gabcdef123456")
        );
        assert_eq!(release_of(&vec![0u8; 0x1000]), None);
    }

    #[test]
    fn a_file_without_the_header_is_not_a_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bzImage");
        std::fs::write(&path, b"#!/bin/sh\necho hello\n").unwrap();
        assert!(matches!(
            check_image(&path, NetMode::Loopback),
            Err(VmError::NotAKernel(_))
        ));
        assert!(matches!(
            check_image(&dir.path().join("missing"), NetMode::Loopback),
            Err(VmError::NoImage(_))
        ));
    }

    #[test]
    fn a_built_tree_without_9p_is_refused_by_its_config() {
        let dir = tempfile::tempdir().unwrap();
        let boot = dir.path().join("arch/x86/boot");
        std::fs::create_dir_all(&boot).unwrap();
        let image = boot.join("bzImage");
        std::fs::write(&image, fake_image("6.99.0-nb-test-nomodules (x) #1")).unwrap();
        std::fs::write(
            dir.path().join(".config"),
            "CONFIG_NET_9P=y\nCONFIG_NET_9P_VIRTIO=y\nCONFIG_VIRTIO_NET=y\n",
        )
        .unwrap();
        let err = check_image(&image, NetMode::Loopback).unwrap_err();
        assert!(err.to_string().contains("9p"), "{err}");
        assert!(format!("{:?}", err).contains("CONFIG_9P_FS"), "{err:?}");
        std::fs::write(
            dir.path().join(".config"),
            "CONFIG_NET_9P=y\nCONFIG_NET_9P_VIRTIO=y\nCONFIG_9P_FS=y\n",
        )
        .unwrap();
        let checked = check_image(&image, NetMode::Loopback).unwrap();
        assert_eq!(checked.features_from, "config");
        let err = check_image(&image, NetMode::Pair).unwrap_err();
        assert!(err.to_string().contains("virtio-net"), "{err}");
    }
}
