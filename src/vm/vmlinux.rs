//! Booting past the decompressor. A bzImage holds the kernel compressed
//! (xz for Debian's), and under TCG the guest spends 10-30 s of emulated
//! time decompressing it before the kernel prints its first line. The
//! kernel inside is an ELF that, built with `CONFIG_PVH`, qemu boots
//! directly: it is decompressed here, natively, once per image, and kept
//! in the user's cache directory (`$XDG_CACHE_HOME/netbisect/vmlinux`,
//! the few most recently used). An image this cannot unpack boots as it
//! is, only slower.

use std::io::Write as _;
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

/// The uncompressed kernel of the bzImage `bytes` (released as
/// `release`), from the cache or unpacked into it; `Err` says why the
/// image must boot as it is.
pub fn uncompressed(bytes: &[u8], release: Option<&str>) -> Result<PathBuf, String> {
    let dir = cache_dir().ok_or("no cache directory (HOME is not set)")?;
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
    let path = dir.join(format!("{release}-{}", &hash.as_str()[..32]));
    if let Ok(file) = std::fs::File::options().append(true).open(&path) {
        // Used now: the pruning below keeps the most recently used.
        let _ = file.set_modified(std::time::SystemTime::now());
        return Ok(path);
    }
    let (compressed, size) = payload(bytes)?;
    let tool = decompressor(compressed)?;
    std::fs::create_dir_all(&dir)
        .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    let unpacked = unpack(tool, compressed, &dir)?;
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
    let mut file = tempfile::NamedTempFile::new_in(&dir)
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    file.write_all(&unpacked)
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    file.persist(&path)
        .map_err(|err| format!("cannot write {}: {}", path.display(), err.error))?;
    prune(&dir);
    Ok(path)
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

fn unpack(tool: &[&str], stream: &[u8], dir: &Path) -> Result<Vec<u8>, String> {
    let failed = |err: std::io::Error| format!("cannot run {}: {err}", tool[0]);
    // Through a file, so that neither pipe can fill while the other waits.
    let mut input = tempfile::tempfile_in(dir)
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    input
        .write_all(stream)
        .and_then(|()| std::io::Seek::rewind(&mut input))
        .map_err(|err| format!("cannot write in {}: {err}", dir.display()))?;
    let output = Command::new(tool[0])
        .args(&tool[1..])
        .stdin(input)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .output()
        .map_err(failed)?;
    if !output.status.success() {
        return Err(format!("{} failed ({})", tool[0], output.status));
    }
    Ok(output.stdout)
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

/// Keeps the [`KEEP`] most recently used kernels of the cache.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            if !meta.is_file() {
                return None;
            }
            Some((meta.modified().ok()?, entry.path()))
        })
        .collect();
    files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    for (_, path) in files.into_iter().skip(KEEP) {
        let _ = std::fs::remove_file(path);
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
}
