//! The guest's initramfs, written here at each boot (it costs a few
//! milliseconds): a static busybox, the modules the guest needs taken from
//! `/lib/modules/RELEASE` of the image's release, the skeleton of the
//! guest's root (see [`super::guest_root`]) and an `/init` that builds
//! that root on a tmpfs, mounts this host's `/usr` and the other shared
//! directories over 9p read-only, tmpfs where the guest writes, the input
//! directory read-only and the output directory read-write, then hands
//! over to the guest script on that root and powers the guest off.
//!
//! The archive is cpio's "newc" format, the one the kernel unpacks.

use super::VmError;
use super::guest_root::{GuestRoot, RootEntry};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The 9p tag of the output directory.
pub const SHARED_TAG: &str = "nbshared";
/// The 9p tag of the input directory, which the guest may only read.
pub const INPUT_TAG: &str = "nbinput";
/// How the guest's init names itself on the console: the host finds its
/// last word there when the guest did not reach the test.
pub const INIT_NAME: &str = "netbisect-init";

/// The modules the guest loads, in this order, each after what
/// `modules.dep` says it needs: the virtio PCI transport, 9p over it,
/// and the NIC's driver for the modes with NICs.
const BASE_MODULES: &[&str] = &["virtio_pci", "9pnet_virtio", "9p"];
const NIC_MODULES: &[&str] = &["virtio_net"];

/// Where the guest writes on top of its read-only root.
const TMPFS_DIRS: &[&str] = &["/run", "/tmp", "/var/tmp"];

/// Where the skeleton of the guest's root lies in the initramfs.
const SKELETON: &str = "skel";

/// `e_type` of an ELF program header that names a dynamic loader.
const PT_INTERP: u32 = 3;

/// What goes into the initramfs.
pub struct Contents<'a> {
    /// A statically linked busybox.
    pub busybox: &'a Path,
    /// The image's release, to find its modules.
    pub release: Option<&'a str>,
    /// Whether the guest has NICs (their driver is loaded).
    pub nics: bool,
    /// The guest's root.
    pub root: &'a GuestRoot,
    /// Where the input directory (read-only) is mounted in the guest.
    pub input_dir: &'a str,
    /// Where the output directory is mounted in the guest.
    pub output_dir: &'a str,
    /// The command the guest runs on the host's root, by `/bin/sh -c`.
    pub command: &'a str,
}

/// Writes the initramfs of `contents` to `path`.
pub fn write(contents: &Contents<'_>, path: &Path) -> Result<(), VmError> {
    let busybox = std::fs::read(contents.busybox).map_err(|source| VmError::Io {
        what: format!("read {}", contents.busybox.display()),
        source,
    })?;
    let mut wanted: Vec<&str> = BASE_MODULES.to_vec();
    if contents.nics {
        wanted.extend_from_slice(NIC_MODULES);
    }
    let modules = match contents.release {
        Some(release) => modules_in_order(&Path::new("/lib/modules").join(release), &wanted)?,
        None => Vec::new(),
    };
    let mut archive = Cpio::default();
    for dir in ["bin", "dev", "proc", "sys", "newroot", "modules"] {
        archive.dir(dir)?;
    }
    // The kernel opens /dev/console for init's output before /dev is
    // mounted.
    archive.entry("dev/console", 0o020600, (5, 1), &[])?;
    archive.entry("bin/busybox", 0o100755, (0, 0), &busybox)?;
    archive.entry(SKELETON, 0o040755, (0, 0), &[])?;
    for entry in &contents.root.entries {
        match entry {
            RootEntry::Dir(name, mode) => {
                archive.entry(&format!("{SKELETON}/{name}"), 0o040000 | mode, (0, 0), &[])?;
            }
            RootEntry::File(name, bytes) => {
                archive.entry(&format!("{SKELETON}/{name}"), 0o100644, (0, 0), bytes)?;
            }
            RootEntry::Link(name, target) => {
                archive.entry(
                    &format!("{SKELETON}/{name}"),
                    0o120777,
                    (0, 0),
                    target.as_bytes(),
                )?;
            }
        }
    }
    let mut names = Vec::new();
    for (idx, module) in modules.iter().enumerate() {
        let bytes = std::fs::read(module).map_err(|source| VmError::Io {
            what: format!("read {}", module.display()),
            source,
        })?;
        let file = module
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = format!("modules/{idx:02}-{file}");
        archive.entry(&name, 0o100644, (0, 0), &bytes)?;
        names.push(name);
    }
    archive.entry(
        "init",
        0o100755,
        (0, 0),
        init_script(contents, &names).as_bytes(),
    )?;
    std::fs::write(path, archive.finish()?).map_err(|source| VmError::Io {
        what: format!("write {}", path.display()),
        source,
    })
}

/// The guest's `/init`, run by busybox's shell.
fn init_script(contents: &Contents<'_>, modules: &[String]) -> String {
    let mut script = String::new();
    let _ = write!(
        script,
        "#!/bin/busybox sh\n\
         b=/bin/busybox\n\
         say() {{ echo \"{INIT_NAME}: $*\"; }}\n\
         die() {{ say \"$*\"; echo o > /proc/sysrq-trigger; $b sleep 30; exit 1; }}\n\
         $b mount -t proc proc /proc\n\
         $b mount -t sysfs sysfs /sys\n\
         $b mount -t devtmpfs devtmpfs /dev\n"
    );
    for module in modules {
        let _ = writeln!(script, "$b insmod /{module} || say 'cannot load {module}'");
    }
    let nine_p = "trans=virtio,version=9p2000.L,msize=512000";
    let _ = writeln!(
        script,
        "$b mount -t tmpfs -o mode=0755 tmpfs /newroot && $b cp -a /{SKELETON}/. /newroot/ || \
         die 'cannot build the guest root in memory'"
    );
    let (system, shares): (Vec<_>, Vec<_>) =
        contents.root.mounts.iter().partition(|dir| dir.system);
    for dir in system {
        let why = if dir.path == Path::new("/usr") {
            "cannot mount the host root over 9p (its /usr): the kernel needs \
             CONFIG_NET_9P_VIRTIO and CONFIG_9P_FS (built in, or as modules \
             installed in /lib/modules/RELEASE of this host)"
                .to_string()
        } else {
            format!("cannot mount the host's {} over 9p", dir.path.display())
        };
        let _ = writeln!(
            script,
            "$b mount -t 9p -o {nine_p},ro,cache=loose {tag} {at} || die {why}",
            tag = dir.tag,
            at = super::quote(&format!("/newroot{}", dir.path.display())),
            why = super::quote(&why),
        );
    }
    for dir in TMPFS_DIRS {
        let _ = writeln!(
            script,
            "$b mount -t tmpfs -o mode=1777 tmpfs /newroot{dir} || die 'cannot mount {dir}'"
        );
    }
    let (input, output) = (contents.input_dir, contents.output_dir);
    let _ = writeln!(
        script,
        "$b mkdir -p /newroot{input} /newroot{output}\n\
         $b mount -t 9p -o {nine_p},ro,cache=loose {INPUT_TAG} /newroot{input} || \
         die 'cannot mount the input directory over 9p'\n\
         $b mount -t 9p -o {nine_p} {SHARED_TAG} /newroot{output} || \
         die 'cannot mount the shared directory over 9p'"
    );
    // After the tmpfs mounts, so that a share under /tmp is not hidden.
    for dir in shares {
        let at = super::quote(&format!("/newroot{}", dir.path.display()));
        let _ = writeln!(
            script,
            "$b mkdir -p {at} && $b mount -t 9p -o {nine_p},ro {tag} {at} || die {why}",
            tag = dir.tag,
            why = super::quote(&format!(
                "cannot mount --vm-share {} over 9p",
                dir.path.display()
            )),
        );
    }
    let _ = write!(
        script,
        "$b mount -t proc proc /newroot/proc || die 'cannot mount /proc'\n\
         $b mount -t sysfs sysfs /newroot/sys || die 'cannot mount /sys'\n\
         $b mount -t devtmpfs devtmpfs /newroot/dev || die 'cannot mount /dev'\n\
         $b mount -o remount,ro /newroot || say 'the guest root stays writable'\n\
         $b umount /proc /sys /dev\n\
         $b ip link set lo up\n\
         export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n\
         export HOME=/tmp\n\
         exec $b switch_root /newroot /bin/sh -c {command}\n",
        command = super::quote(contents.command),
    );
    script
}

/// The module files that give `wanted`, each after the ones it depends
/// on, from `modules.dep` of `dir`. Built-in modules, or a release whose
/// modules are not installed here, give nothing: the kernel is taken to
/// have them built in (the guest says so if a mount fails).
fn modules_in_order(dir: &Path, wanted: &[&str]) -> Result<Vec<PathBuf>, VmError> {
    let Ok(text) = std::fs::read_to_string(dir.join("modules.dep")) else {
        return Ok(Vec::new());
    };
    let mut deps: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for line in text.lines() {
        let Some((path, needs)) = line.split_once(':') else {
            continue;
        };
        let needs = needs.split_whitespace().map(str::to_string).collect();
        deps.insert(module_name(path), (path.to_string(), needs));
    }
    let mut order = Vec::new();
    let mut seen = HashSet::new();
    for name in wanted {
        visit(&module_name(name), &deps, &mut seen, &mut order, 0);
    }
    Ok(order.into_iter().map(|path| dir.join(path)).collect())
}

fn visit(
    name: &str,
    deps: &BTreeMap<String, (String, Vec<String>)>,
    seen: &mut HashSet<String>,
    order: &mut Vec<String>,
    depth: usize,
) {
    // modules.dep has no cycles; the bound keeps a damaged one finite.
    if depth > 64 || !seen.insert(name.to_string()) {
        return;
    }
    let Some((path, needs)) = deps.get(name) else {
        return;
    };
    for need in needs {
        visit(&module_name(need), deps, seen, order, depth + 1);
    }
    order.push(path.clone());
}

/// `kernel/net/9p/9pnet-virtio.ko.xz` -> `9pnet_virtio`.
fn module_name(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split(".ko").next().unwrap_or(file);
    stem.replace('-', "_")
}

/// True when `bytes` are a 64-bit ELF executable with no dynamic loader,
/// which runs in an initramfs holding nothing else.
pub fn is_static_elf(bytes: &[u8]) -> bool {
    let read = |at: usize, len: usize| -> Option<u64> {
        let slice = bytes.get(at..at.checked_add(len)?)?;
        Some(
            slice
                .iter()
                .rev()
                .fold(0u64, |acc, &byte| (acc << 8) | u64::from(byte)),
        )
    };
    // Magic, 64-bit, little-endian.
    if bytes.get(..6) != Some(b"\x7fELF\x02\x01".as_slice()) {
        return false;
    }
    let (Some(offset), Some(size), Some(count)) = (read(0x20, 8), read(0x36, 2), read(0x38, 2))
    else {
        return false;
    };
    (0..count).all(|idx| {
        let at = usize::try_from(offset + idx * size).unwrap_or(usize::MAX);
        read(at, 4).is_some_and(|kind| kind != u64::from(PT_INTERP))
    })
}

/// A cpio archive in the "newc" format.
#[derive(Default)]
struct Cpio {
    bytes: Vec<u8>,
    inode: u32,
}

impl Cpio {
    fn dir(&mut self, name: &str) -> Result<(), VmError> {
        self.entry(name, 0o040755, (0, 0), &[])
    }

    /// One entry: `mode` holds the file type, `device` is the (major,
    /// minor) of a device node.
    fn entry(
        &mut self,
        name: &str,
        mode: u32,
        device: (u32, u32),
        data: &[u8],
    ) -> Result<(), VmError> {
        let size = u32::try_from(data.len())
            .map_err(|_| VmError::BadOption(format!("{name} is too large for an initramfs")))?;
        self.inode += 1;
        let links = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        let fields = [
            self.inode,
            mode,
            0,
            0,
            links,
            0,
            size,
            0,
            0,
            device.0,
            device.1,
            u32::try_from(name.len() + 1).unwrap_or(u32::MAX),
            0,
        ];
        self.bytes.extend_from_slice(b"070701");
        for field in fields {
            self.bytes
                .extend_from_slice(format!("{field:08X}").as_bytes());
        }
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.push(0);
        self.pad();
        self.bytes.extend_from_slice(data);
        self.pad();
        Ok(())
    }

    fn pad(&mut self) {
        while !self.bytes.len().is_multiple_of(4) {
            self.bytes.push(0);
        }
    }

    fn finish(mut self) -> Result<Vec<u8>, VmError> {
        self.inode = 0;
        self.entry("TRAILER!!!", 0, (0, 0), &[])?;
        Ok(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_come_after_what_they_need() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("modules.dep"),
            "kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko\n\
             kernel/net/9p/9pnet.ko:\n\
             kernel/fs/netfs/netfs.ko:\n\
             kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/drivers/virtio/virtio.ko\n\
             kernel/drivers/virtio/virtio.ko:\n",
        )
        .unwrap();
        let order = modules_in_order(dir.path(), &["virtio_pci", "9pnet_virtio", "9p"]).unwrap();
        let names: Vec<String> = order
            .iter()
            .map(|path| module_name(&path.to_string_lossy()))
            .collect();
        assert_eq!(names, ["9pnet", "virtio", "9pnet_virtio", "netfs", "9p"]);
        assert!(order[0].starts_with(dir.path()));
        // No modules installed: the kernel is taken to have them built in.
        assert!(
            modules_in_order(&dir.path().join("none"), &["9p"])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_archive_is_newc_with_a_trailer() {
        let mut archive = Cpio::default();
        archive.dir("bin").unwrap();
        archive
            .entry("init", 0o100755, (0, 0), b"#!/bin/sh\n")
            .unwrap();
        let bytes = archive.finish().unwrap();
        assert!(bytes.starts_with(b"070701"));
        assert_eq!(bytes.len() % 4, 0);
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("init\0"));
        assert!(text.contains("#!/bin/sh\n"));
        assert!(text.contains("TRAILER!!!\0"));
        // The second header starts 4-aligned after "bin\0" and its padding.
        assert_eq!(&bytes[116..122], b"070701");
    }

    #[test]
    fn only_a_static_executable_is_taken_for_the_initramfs() {
        assert!(!is_static_elf(b"#!/bin/sh\n"));
        let mut elf = vec![0u8; 0x100];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        elf[0x20] = 0x40; // program headers at 0x40
        elf[0x36] = 0x38; // of 56 bytes
        elf[0x38] = 2; // two of them
        elf[0x40] = 1; // PT_LOAD
        elf[0x78] = 1; // PT_LOAD
        assert!(is_static_elf(&elf));
        elf[0x78] = PT_INTERP as u8;
        assert!(!is_static_elf(&elf));
    }
}
