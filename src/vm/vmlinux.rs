//! Booting past the decompressor. A bzImage holds the kernel compressed
//! (xz for Debian's), and under TCG the guest spends 10-30 s of emulated
//! time decompressing it before the kernel prints its first line. The
//! kernel inside is an ELF that, built with `CONFIG_PVH`, qemu boots
//! directly: it is decompressed here, natively, once per image, and kept
//! in the user's cache directory (`$XDG_CACHE_HOME/netbisect/vmlinux`,
//! the few most recently used). An image this cannot unpack boots as it
//! is, only slower.
//!
//! The cache is not trusted further than it can be checked: an entry is
//! named after the blake3 hash of its image and has a `.blake3` file
//! beside it with the hash of the unpacked kernel, both checked before
//! every boot; an entry that does not match, or that is not a regular
//! file (a symbolic link planted there), is replaced. Entries are written
//! to a temporary file and renamed into place, so a killed run leaves
//! none half-written, and nothing in the cache is opened through a link.

use rustix::fs::{FileType, Mode, OFlags};
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Offset of the setup header's count of 512-byte setup sectors.
const SETUP_SECTS: usize = 0x1f1;
/// Offset of the boot protocol version.
const PROTOCOL: usize = 0x206;
/// Offsets of the compressed payload's offset and length (protocol 2.08+).
const PAYLOAD_OFFSET: usize = 0x248;
const PAYLOAD_LENGTH: usize = 0x24c;
/// Unpacked kernels kept in the cache.
const KEEP: usize = 4;
/// ELF program header type of notes.
const PT_NOTE: u64 = 4;
/// The Xen note that gives the PVH entry point, which qemu boots.
const XEN_ELFNOTE_PHYS32_ENTRY: u64 = 18;
/// The ending of the file with an entry's hash.
const SUM_SUFFIX: &str = ".blake3";
/// The largest unpacked kernel kept: the uncompressed size a bzImage
/// states is trusted only up to this.
const MAX_UNPACKED_BYTES: u32 = 1 << 30;
/// How old a temporary file of the cache must be to be taken for one a
/// killed run left.
const STALE_TEMPORARY: std::time::Duration = std::time::Duration::from_secs(3600);

/// The uncompressed kernel of the bzImage at `image` (released as
/// `release`), from the cache or unpacked into it; `Err` says why the
/// image must boot as it is.
pub fn uncompressed(image: &Path, release: Option<&str>) -> Result<PathBuf, String> {
    let dir = cache_dir().ok_or("no cache directory (HOME is not set)")?;
    let mut bytes = Vec::new();
    std::fs::File::open(image)
        .and_then(|file| {
            file.take(super::kernel::MAX_IMAGE_BYTES + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|err| format!("cannot read {}: {err}", image.display()))?;
    if bytes.len() as u64 > super::kernel::MAX_IMAGE_BYTES {
        return Err(format!("{} grew past its limit", image.display()));
    }
    uncompressed_in(&dir, &bytes, release)
}

/// [`uncompressed`] with the cache in `dir`.
fn uncompressed_in(dir: &Path, bytes: &[u8], release: Option<&str>) -> Result<PathBuf, String> {
    let hash = blake3::hash(bytes).to_hex();
    let release: String = release
        .unwrap_or("unknown")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let name = format!("{release}-{}", &hash.as_str()[..32]);
    std::fs::create_dir_all(dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    check_own_directory(dir)?;
    let path = dir.join(&name);
    let sum_path = dir.join(format!("{name}{SUM_SUFFIX}"));
    match verified(&path, &sum_path) {
        Ok(()) => return Ok(path),
        // Rebuilt below; renaming over the entry replaces a link planted
        // there instead of writing through it.
        Err(Mismatch::Absent) | Err(Mismatch::Damaged) => {}
    }
    let (compressed, size) = payload(bytes)?;
    if size > MAX_UNPACKED_BYTES {
        return Err(format!(
            "the image says its kernel unpacks to {size} bytes, over {MAX_UNPACKED_BYTES}"
        ));
    }
    let tool = decompressor(compressed)?;
    let unpacked = unpack(tool, compressed, dir, size)?;
    if u64::try_from(unpacked.len()).ok() != Some(u64::from(size)) {
        return Err(format!(
            "{} gave {} bytes, the image says {size}",
            tool[0],
            unpacked.len()
        ));
    }
    if !has_pvh_entry(&unpacked) {
        return Err("the kernel has no PVH entry point (CONFIG_PVH)".to_string());
    }
    write_atomically(dir, &path, &unpacked)?;
    let sum = blake3::hash(&unpacked).to_hex();
    write_atomically(dir, &sum_path, sum.as_bytes())?;
    prune(dir);
    Ok(path)
}

/// Why a cache entry cannot be used as it is.
enum Mismatch {
    /// It is not there.
    Absent,
    /// It is there but not a regular file, or not what its hash says.
    Damaged,
}

/// Checks the entry at `path` against the hash in `sum_path`, neither
/// opened through a link, and marks it used.
fn verified(path: &Path, sum_path: &Path) -> Result<(), Mismatch> {
    let Some(entry) = open_regular(path)? else {
        return Err(Mismatch::Absent);
    };
    let Some(sum_file) = open_regular(sum_path)? else {
        return Err(Mismatch::Damaged);
    };
    let mut expected = String::new();
    sum_file
        .take(128)
        .read_to_string(&mut expected)
        .map_err(|_| Mismatch::Damaged)?;
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_reader(&entry)
        .map_err(|_| Mismatch::Damaged)?;
    if hasher.finalize().to_hex().as_str() != expected.trim() {
        return Err(Mismatch::Damaged);
    }
    // Used now: the pruning keeps the most recently used.
    let _ = entry.set_modified(std::time::SystemTime::now());
    Ok(())
}

/// `path` opened for reading, without following a link: `None` when
/// nothing is there, [`Mismatch::Damaged`] for anything but a regular
/// file.
fn open_regular(path: &Path) -> Result<Option<std::fs::File>, Mismatch> {
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(_) => return Err(Mismatch::Damaged),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|_| Mismatch::Damaged)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(Mismatch::Damaged);
    }
    Ok(Some(std::fs::File::from(fd)))
}

/// Checks that `dir` is a directory (not a link to one) of this user's,
/// which no one else may write.
fn check_own_directory(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
    let own = meta.uid() == rustix::process::geteuid().as_raw();
    if !meta.file_type().is_dir() || !own || meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is not a directory of this user's that only this user may write",
            dir.display()
        ));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file of `dir` renamed
/// into place.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    file.persist(path)
        .map_err(|err| format!("cannot write {}: {}", path.display(), err.error))?;
    Ok(())
}

fn cache_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let base =
        absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".cache")))?;
    Some(base.join("netbisect").join("vmlinux"))
}

/// The compressed kernel of a bzImage and its uncompressed size (the
/// four bytes the build appends to the compressed stream).
fn payload(bytes: &[u8]) -> Result<(&[u8], u32), String> {
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let protocol = bytes
        .get(PROTOCOL..PROTOCOL + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .unwrap_or(0);
    if protocol < 0x208 {
        return Err(format!("boot protocol {protocol:#x} names no payload"));
    }
    let sectors = match bytes.get(SETUP_SECTS).copied().unwrap_or(0) {
        0 => 4,
        n => usize::from(n),
    };
    let (Some(offset), Some(length)) = (word(PAYLOAD_OFFSET), word(PAYLOAD_LENGTH)) else {
        return Err("the setup header is cut short".to_string());
    };
    let start = (sectors + 1) * 512 + offset as usize;
    let stream = bytes
        .get(start..start + length as usize)
        .filter(|stream| stream.len() > 4)
        .ok_or("the payload lies outside the image")?;
    let (compressed, trailer) = stream.split_at(stream.len() - 4);
    let size = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    Ok((compressed, size))
}

/// The program, with its arguments, that decompresses `stream` to stdout.
fn decompressor(stream: &[u8]) -> Result<&'static [&'static str], String> {
    let tool: &[&str] = if stream.starts_with(b"\xfd7zXZ\0") {
        &["xz", "-dc", "--single-stream"]
    } else if stream.starts_with(b"\x1f\x8b") {
        &["gzip", "-dc"]
    } else if stream.starts_with(b"\x28\xb5\x2f\xfd") {
        &["zstd", "-dcq"]
    } else if stream.starts_with(b"BZh") {
        &["bzip2", "-dc"]
    } else if stream.starts_with(b"\x02\x21\x4c\x18") {
        &["lz4", "-dc"]
    } else {
        return Err("the kernel is compressed in a format not unpacked here".to_string());
    };
    Ok(tool)
}

/// `stream` decompressed by `tool`, read up to one byte past the `size`
/// the image states, so that a lying image cannot make this hold more.
fn unpack(tool: &[&str], stream: &[u8], dir: &Path, size: u32) -> Result<Vec<u8>, String> {
    let failed = |err: std::io::Error| format!("cannot run {}: {err}", tool[0]);
    // Through a file, so that neither pipe can fill while the other waits.
    let mut input = tempfile::tempfile_in(dir)
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    input
        .write_all(stream)
        .and_then(|()| std::io::Seek::rewind(&mut input))
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    let mut child = Command::new(tool[0])
        .args(&tool[1..])
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(failed)?;
    let mut unpacked = Vec::new();
    let read = child
        .stdout
        .take()
        .map(|stdout| stdout.take(u64::from(size) + 1).read_to_end(&mut unpacked));
    if unpacked.len() as u64 > u64::from(size) {
        // Past the cap the tool is stopped rather than waited for.
        let _ = child.kill();
    }
    let status = child.wait().map_err(failed)?;
    match read {
        Some(Ok(_)) => {}
        Some(Err(err)) => return Err(failed(err)),
        None => return Err(format!("cannot read what {} gave", tool[0])),
    }
    if !status.success() && unpacked.len() as u64 <= u64::from(size) {
        return Err(format!("{} failed ({status})", tool[0]));
    }
    Ok(unpacked)
}

/// True when `elf` is a 64-bit ELF with the PVH entry note.
fn has_pvh_entry(elf: &[u8]) -> bool {
    let read = |at: u64, len: usize| -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let slice = elf.get(at..at.checked_add(len)?)?;
        Some(
            slice
                .iter()
                .rev()
                .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)),
        )
    };
    if elf.get(..6) != Some(b"\x7fELF\x02\x01".as_slice()) {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (read(0x20, 8), read(0x36, 2), read(0x38, 2))
    else {
        return false;
    };
    for idx in 0..phnum {
        let header = phoff + idx * phentsize;
        if read(header, 4) != Some(PT_NOTE) {
            continue;
        }
        let (Some(mut at), Some(size)) = (read(header + 8, 8), read(header + 32, 8)) else {
            continue;
        };
        let end = at.saturating_add(size);
        // Notes: name size, descriptor size, type, then both, 4-aligned.
        while at + 12 <= end {
            let (Some(name_size), Some(desc_size), Some(kind)) =
                (read(at, 4), read(at + 4, 4), read(at + 8, 4))
            else {
                break;
            };
            let name = usize::try_from(at + 12)
                .ok()
                .and_then(|start| elf.get(start..start + usize::try_from(name_size).ok()?));
            if name == Some(b"Xen\0".as_slice()) && kind == XEN_ELFNOTE_PHYS32_ENTRY {
                return true;
            }
            at += 12 + name_size.div_ceil(4) * 4 + desc_size.div_ceil(4) * 4;
        }
    }
    false
}

/// Keeps the [`KEEP`] most recently used kernels of the cache, with
/// their hashes, and removes the temporary files a killed run left.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kernels: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        // symlink_metadata: a link is never followed, only removed.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".tmp") {
            if modified.elapsed().is_ok_and(|age| age > STALE_TEMPORARY) {
                let _ = std::fs::remove_file(entry.path());
            }
        } else if !name.ends_with(SUM_SUFFIX) && !meta.is_dir() {
            kernels.push((modified, entry.path()));
        }
    }
    kernels.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, path) in kernels.into_iter().skip(KEEP) {
        let mut sum = path.clone().into_os_string();
        sum.push(SUM_SUFFIX);
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit ELF whose one PT_NOTE holds a note `name`/`kind`.
    fn elf_with_note(name: &[u8], kind: u32) -> Vec<u8> {
        let mut elf = vec![0u8; 0x100];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        elf[0x20] = 0x40;
        elf[0x36] = 0x38;
        elf[0x38] = 1;
        elf[0x40] = PT_NOTE as u8;
        elf[0x48] = 0xa0; // the note's offset
        elf[0x60] = 24; // its size
        let note = 0xa0;
        elf[note] = name.len() as u8;
        elf[note + 4] = 4;
        elf[note + 8..note + 12].copy_from_slice(&kind.to_le_bytes());
        elf[note + 12..note + 12 + name.len()].copy_from_slice(name);
        elf
    }

    #[test]
    fn only_a_kernel_with_the_pvh_note_is_booted_unpacked() {
        assert!(has_pvh_entry(&elf_with_note(b"Xen\0", 18)));
        assert!(!has_pvh_entry(&elf_with_note(b"Xen\0", 17)));
        assert!(!has_pvh_entry(&elf_with_note(b"GNU\0", 18)));
        assert!(!has_pvh_entry(b"MZ not an elf"));
    }

    #[test]
    fn the_payload_is_found_through_the_setup_header() {
        let mut image = vec![0u8; 0x1000];
        image[SETUP_SECTS] = 3;
        image[PROTOCOL..PROTOCOL + 2].copy_from_slice(&0x20fu16.to_le_bytes());
        image[PAYLOAD_OFFSET..PAYLOAD_OFFSET + 4].copy_from_slice(&0x10u32.to_le_bytes());
        image[PAYLOAD_LENGTH..PAYLOAD_LENGTH + 4].copy_from_slice(&10u32.to_le_bytes());
        let start = 4 * 512 + 0x10;
        image[start..start + 6].copy_from_slice(b"\x1f\x8bzzzz");
        image[start + 6..start + 10].copy_from_slice(&1234u32.to_le_bytes());
        let (stream, size) = payload(&image).unwrap();
        assert_eq!(stream, b"\x1f\x8bzzzz");
        assert_eq!(size, 1234);
        assert_eq!(decompressor(stream).unwrap()[0], "gzip");
        image[PROTOCOL..PROTOCOL + 2].copy_from_slice(&0x207u16.to_le_bytes());
        assert!(payload(&image).is_err());
    }

    /// A Debian kernel to unpack, when this host has one.
    fn debian_image() -> Option<(Vec<u8>, &'static str)> {
        let release = "6.1.0-57-amd64";
        match std::fs::read(format!("/boot/vmlinuz-{release}")) {
            Ok(bytes) => Some((bytes, release)),
            Err(err) => {
                test_fixtures::skip::skip(format!("no /boot/vmlinuz-{release} ({err})"));
                None
            }
        }
    }

    #[test]
    fn a_damaged_or_linked_cache_entry_is_rebuilt_not_used() {
        let Some((image, release)) = debian_image() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let path = uncompressed_in(&cache, &image, Some(release)).unwrap();
        let good = std::fs::read(&path).unwrap();
        assert!(has_pvh_entry(&good));

        let mut damaged = good.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0xff;
        std::fs::write(&path, &damaged).unwrap();
        assert_eq!(
            uncompressed_in(&cache, &image, Some(release)).unwrap(),
            path
        );
        assert!(
            std::fs::read(&path).unwrap() == good,
            "the damaged entry was kept"
        );

        let planted = dir.path().join("planted");
        std::fs::write(&planted, &damaged).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&planted, &path).unwrap();
        assert_eq!(
            uncompressed_in(&cache, &image, Some(release)).unwrap(),
            path
        );
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file(), "the planted link was kept");
        assert!(std::fs::read(&path).unwrap() == good);
        assert!(
            std::fs::read(&planted).unwrap() == damaged,
            "written through the link"
        );

        let mut sum = path.clone().into_os_string();
        sum.push(SUM_SUFFIX);
        std::fs::remove_file(&sum).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &sum).unwrap();
        assert_eq!(
            uncompressed_in(&cache, &image, Some(release)).unwrap(),
            path
        );
        assert!(
            std::fs::symlink_metadata(&sum)
                .unwrap()
                .file_type()
                .is_file()
        );

        let names: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");

        let linked = dir.path().join("linked-cache");
        std::os::unix::fs::symlink(&cache, &linked).unwrap();
        let err = uncompressed_in(&linked, &image, Some(release)).unwrap_err();
        assert!(err.contains("not a directory of this user's"), "{err}");
    }
}
