//! The pre-shared token and its challenge-response.
//!
//! A server listening beyond loopback sends a fresh random challenge; the
//! client answers with HMAC-SHA256 (RFC 2104) of the challenge under the
//! token, so the token itself never crosses the network. The server checks
//! the answer in constant time.

use hmac::{Hmac, KeyInit, Mac};
use rustix::io::Errno;
use rustix::rand::{GetRandomFlags, getrandom};
use sha2::Sha256;
use std::fmt;
use std::path::{Path, PathBuf};

/// Fewest bytes a token must have.
pub const MIN_TOKEN_BYTES: usize = 16;
/// Most bytes a token file may hold, whitespace included.
pub const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Bytes of randomness in a challenge.
pub const CHALLENGE_BYTES: usize = 32;
/// Text mixed into every MAC, so a MAC cannot be replayed to another
/// protocol that shares the token.
const CONTEXT: &[u8] = b"netbisect.control auth v1\n";

/// Why a token could not be loaded or a challenge made.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The token file could not be read.
    #[error("cannot read token file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The token file is a FIFO, a device, a directory or a socket: a
    /// read of it could block or never end.
    #[error("token file {path} is not a regular file but {kind}")]
    NotRegular {
        /// The file.
        path: PathBuf,
        /// What it is instead, with its article ("a FIFO").
        kind: &'static str,
    },
    /// The token file is larger than a token could be.
    #[error("token file {path} is larger than {MAX_TOKEN_FILE_BYTES} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// The token is too short to be a secret.
    #[error("token in {path} is shorter than {MIN_TOKEN_BYTES} bytes")]
    TooShort {
        /// The file.
        path: PathBuf,
    },
    /// Other users may read the token file: the secret is not one.
    #[error(
        "token file {path} is readable by {who} (mode {mode:03o}); \
         make it private with: chmod 600 {path}"
    )]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
        /// `group`, `others` or `group and others`.
        who: &'static str,
    },
    /// The system gave no randomness.
    #[error("cannot draw random bytes: {0}")]
    Random(std::io::Error),
}

/// A pre-shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Vec<u8>);

impl fmt::Debug for Token {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("Token(..)")
    }
}

impl Token {
    /// Reads a token file: its content with surrounding whitespace removed.
    /// Only a regular file of at most [`MAX_TOKEN_FILE_BYTES`] is read,
    /// and it is opened without blocking, so that a FIFO or a device
    /// given by mistake is refused at once. A file readable by its group
    /// or by others is refused, as ssh refuses a private key others may
    /// read.
    pub fn from_file(path: &Path) -> Result<Token, AuthError> {
        use std::io::Read;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
        let read_error = |source| AuthError::Read {
            path: path.to_path_buf(),
            source,
        };
        // O_NONBLOCK: opening a FIFO for reading would otherwise wait for
        // a writer. The type and mode are read from the open file, so
        // that they are those of the file whose bytes are read.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(read_error)?;
        let metadata = file.metadata().map_err(read_error)?;
        let file_type = metadata.file_type();
        if !file_type.is_file() {
            let kind = if file_type.is_fifo() {
                "a FIFO"
            } else if file_type.is_dir() {
                "a directory"
            } else if file_type.is_char_device() || file_type.is_block_device() {
                "a device"
            } else if file_type.is_socket() {
                "a socket"
            } else {
                "a special file"
            };
            return Err(AuthError::NotRegular {
                path: path.to_path_buf(),
                kind,
            });
        }
        let mode = metadata.permissions().mode() & 0o777;
        let who = match (mode & 0o040 != 0, mode & 0o004 != 0) {
            (true, true) => Some("group and others"),
            (true, false) => Some("group"),
            (false, true) => Some("others"),
            (false, false) => None,
        };
        if let Some(who) = who {
            return Err(AuthError::TooOpen {
                path: path.to_path_buf(),
                mode,
                who,
            });
        }
        let mut bytes = Vec::new();
        file.take(MAX_TOKEN_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_error)?;
        if bytes.len() as u64 > MAX_TOKEN_FILE_BYTES {
            return Err(AuthError::TooLarge {
                path: path.to_path_buf(),
            });
        }
        let token = bytes.trim_ascii();
        if token.len() < MIN_TOKEN_BYTES {
            return Err(AuthError::TooShort {
                path: path.to_path_buf(),
            });
        }
        Ok(Token(token.to_vec()))
    }

    fn mac(&self, challenge: &str) -> Hmac<Sha256> {
        // HMAC takes keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("hmac accepts keys of any length"));
        mac.update(CONTEXT);
        mac.update(challenge.as_bytes());
        mac
    }

    /// The answer to `challenge`, as hex.
    pub fn respond(&self, challenge: &str) -> String {
        hex(&self.mac(challenge).finalize().into_bytes())
    }

    /// True when `answer` is the right answer to `challenge`; compares in
    /// constant time.
    pub fn verify(&self, challenge: &str, answer: &str) -> bool {
        match unhex(answer) {
            Some(bytes) => self.mac(challenge).verify_slice(&bytes).is_ok(),
            None => false,
        }
    }
}

/// A fresh random challenge, as hex.
pub fn new_challenge() -> Result<String, AuthError> {
    let mut bytes = [0u8; CHALLENGE_BYTES];
    let mut filled = 0;
    while filled < bytes.len() {
        match getrandom(&mut bytes[filled..], GetRandomFlags::empty()) {
            Ok(got) => filled += got,
            Err(Errno::INTR) => {}
            Err(err) => return Err(AuthError::Random(err.into())),
        }
    }
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(DIGITS[usize::from(byte >> 4)] as char);
        text.push(DIGITS[usize::from(byte & 15)] as char);
    }
    text
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    let digit = |byte: u8| (byte as char).to_digit(16).map(|d| d as u8);
    text.as_bytes()
        .chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_private(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    #[test]
    fn a_token_file_others_may_read_is_refused_with_the_chmod() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        write_private(&path, "correct horse battery staple\n");
        assert!(Token::from_file(&path).is_ok());
        for (mode, who) in [
            (0o640, "group"),
            (0o604, "others"),
            (0o644, "group and others"),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = Token::from_file(&path).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(&format!("readable by {who} (mode {mode:03o})")),
                "{message}"
            );
            assert!(
                message.ends_with(&format!("chmod 600 {}", path.display())),
                "{message}"
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(Token::from_file(&path).is_ok());
    }

    #[test]
    fn only_a_regular_file_of_token_size_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let err = Token::from_file(&fifo).unwrap_err();
        assert!(
            matches!(err, AuthError::NotRegular { kind: "a FIFO", .. }),
            "{err}"
        );
        let err = Token::from_file(dir.path()).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is not a regular file but a directory"),
            "{err}"
        );
        let err = Token::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(
            matches!(
                err,
                AuthError::NotRegular {
                    kind: "a device",
                    ..
                }
            ),
            "{err}"
        );
        let big = dir.path().join("big");
        write_private(&big, &"x".repeat(MAX_TOKEN_FILE_BYTES as usize + 1));
        assert!(matches!(
            Token::from_file(&big),
            Err(AuthError::TooLarge { .. })
        ));
        write_private(&big, &"x".repeat(MAX_TOKEN_FILE_BYTES as usize));
        assert!(Token::from_file(&big).is_ok());
    }

    #[test]
    fn answers_verify_only_with_the_same_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        write_private(&path, "correct horse battery staple\n");
        let token = Token::from_file(&path).unwrap();
        write_private(&path, "another secret of some length");
        let other = Token::from_file(&path).unwrap();
        write_private(&path, "short");
        assert!(matches!(
            Token::from_file(&path),
            Err(AuthError::TooShort { .. })
        ));

        let challenge = new_challenge().unwrap();
        assert_eq!(challenge.len(), CHALLENGE_BYTES * 2);
        assert_ne!(challenge, new_challenge().unwrap());
        let answer = token.respond(&challenge);
        assert!(token.verify(&challenge, &answer));
        assert!(!other.verify(&challenge, &answer));
        assert!(!token.verify(&challenge, "zz"));
        assert!(!token.verify(&new_challenge().unwrap(), &answer));
    }

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
