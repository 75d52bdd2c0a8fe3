//! Whether a connection to PostgreSQL is encrypted and what of the
//! server's certificate it checks ([`TlsSettings`]), read as libpq reads
//! them: `sslmode` and `sslrootcert` in the address's query, else the
//! `PGSSLMODE` and `PGSSLROOTCERT` environment variables, else `prefer`
//! and `~/.postgresql/root.crt`.
//!
//! The CA file is read when the address is parsed, so that a file that
//! cannot be used is an error of the address, before anything connects;
//! an address of Unix socket directories only, which is never encrypted,
//! reads none.
//! As with libpq, a CA file that is there is used in every mode that
//! encrypts (`prefer` and `require` check the chain, as `verify-ca`
//! does), and one that is not there is an error under `verify-ca` and
//! `verify-full` only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls::RootCertStore;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::pki_types::pem::PemObject;

/// What TLS a connection asks for, by libpq's names. `allow` is not
/// among them: it would connect without TLS first, which the client
/// cannot do and then retry with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS (`disable`).
    Disable,
    /// TLS when the server offers it, else none (`prefer`, the default).
    Prefer,
    /// TLS or no connection; the certificate is not checked unless a CA
    /// file is there (`require`).
    Require,
    /// TLS with a certificate signed by the CA file's authorities
    /// (`verify-ca`).
    VerifyCa,
    /// As `verify-ca`, and the certificate names the host connected to
    /// (`verify-full`).
    VerifyFull,
}

impl SslMode {
    /// The mode libpq names `name`, if netbisect has it.
    fn from_name(name: &str) -> Option<SslMode> {
        Some(match name {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    /// libpq's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// True when the certificate must be checked against a CA file.
    fn needs_root_cert(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

/// What an address asks for, before its CA file is read.
pub(super) struct TlsAsked {
    mode: SslMode,
    root_cert: Option<PathBuf>,
}

impl TlsAsked {
    /// What the query of the address `text` asks for, with the
    /// environment's and libpq's defaults, and `text` without those keys
    /// (the client reads neither `verify-*` nor `sslrootcert`); an
    /// unknown mode is the reason the address is refused.
    pub(super) fn from_query(text: &str) -> Result<(String, TlsAsked), String> {
        let mut mode_given = None;
        let mut root_cert_given = None;
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some(("sslmode", value)) => mode_given = Some(percent_decoded(value)),
                Some(("sslrootcert", value)) => root_cert_given = Some(percent_decoded(value)),
                _ => kept.push(pair),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        let mode_name = mode_given
            .or_else(|| non_empty_variable("PGSSLMODE"))
            .unwrap_or_else(|| "prefer".to_string());
        let mode = SslMode::from_name(&mode_name).ok_or_else(|| {
            format!("sslmode={mode_name}: give disable, prefer, require, verify-ca or verify-full")
        })?;
        let root_cert = root_cert_given
            .or_else(|| non_empty_variable("PGSSLROOTCERT"))
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .map(|home| PathBuf::from(home).join(".postgresql").join("root.crt"))
            });
        Ok((rest, TlsAsked { mode, root_cert }))
    }
}

/// Whether a connection is encrypted and what it checks of the server's
/// certificate.
#[derive(Clone, Debug)]
pub struct TlsSettings {
    /// What the address (or `PGSSLMODE`) asks for.
    pub mode: SslMode,
    /// The CA file in use, when there is one.
    pub root_cert: Option<PathBuf>,
    /// The authorities the CA file holds.
    roots: Option<Arc<RootCertStore>>,
}

impl TlsSettings {
    /// The settings of what was `asked` for, the CA file read; what cannot
    /// be used is the reason the address is refused. An address of Unix
    /// socket directories only (`over_sockets_only`) is never encrypted,
    /// so nothing of TLS is read for it, as libpq reads nothing there.
    pub(super) fn new(asked: TlsAsked, over_sockets_only: bool) -> Result<TlsSettings, String> {
        if over_sockets_only {
            return Ok(TlsSettings {
                mode: asked.mode,
                root_cert: None,
                roots: None,
            });
        }
        TlsSettings::with_root_cert(asked.mode, asked.root_cert)
    }

    /// The settings of `mode` with the CA file `root_cert`, read when it
    /// is there and the mode encrypts.
    fn with_root_cert(mode: SslMode, root_cert: Option<PathBuf>) -> Result<TlsSettings, String> {
        if root_cert.as_deref() == Some(Path::new("system")) {
            return Err(
                "sslrootcert=system: the system's authorities are not used; \
                 name the file of the CA that signed the server's certificate"
                    .to_string(),
            );
        }
        let root_cert = root_cert.filter(|path| mode != SslMode::Disable && path.exists());
        let Some(path) = root_cert else {
            if mode.needs_root_cert() {
                return Err(format!(
                    "sslmode={}: no CA file to check the server's certificate with; \
                     name one with sslrootcert=FILE or PGSSLROOTCERT \
                     (or put it in ~/.postgresql/root.crt)",
                    mode.name()
                ));
            }
            return Ok(TlsSettings {
                mode,
                root_cert: None,
                roots: None,
            });
        };
        let roots = read_roots(&path)?;
        Ok(TlsSettings {
            mode,
            root_cert: Some(path),
            roots: Some(Arc::new(roots)),
        })
    }

    /// The authorities of the CA file, when one is in use.
    pub(crate) fn roots(&self) -> Option<&Arc<RootCertStore>> {
        self.roots.as_ref()
    }
}

/// The CA certificates of the PEM file `path`, at least one.
fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let text = std::fs::read(path).map_err(|err| format!("sslrootcert={shown}: {err}"))?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&text) {
        let certificate = certificate
            .map_err(|err| format!("sslrootcert={shown}: not a PEM certificate file: {err}"))?;
        roots
            .add(certificate)
            .map_err(|err| format!("sslrootcert={shown}: a certificate cannot be used: {err}"))?;
    }
    if roots.is_empty() {
        return Err(format!(
            "sslrootcert={shown}: no certificate in it (a PEM file, \
             \"-----BEGIN CERTIFICATE-----\")"
        ));
    }
    Ok(roots)
}

/// The environment variable `name`, unless it is unset or empty.
fn non_empty_variable(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// `text` with its `%XX` escapes decoded, as the client decodes the
/// values of an address's query; an escape that is not one is kept.
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut byte_idx = 0;
    while byte_idx < bytes.len() {
        let escaped = bytes
            .get(byte_idx + 1..byte_idx + 3)
            .filter(|_| bytes[byte_idx] == b'%')
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                decoded.push(byte);
                byte_idx += 3;
            }
            None => {
                decoded.push(bytes[byte_idx]);
                byte_idx += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(percent_decoded("%2Fetc%2fca.crt"), "/etc/ca.crt");
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
    }

    #[test]
    fn modes_are_read_by_libpq_names() {
        for name in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(SslMode::from_name(name).map(SslMode::name), Some(name));
        }
        assert_eq!(SslMode::from_name("allow"), None);
    }

    #[test]
    fn verifying_needs_a_ca_file_and_a_missing_one_is_said() {
        let missing = PathBuf::from("/nonexistent/netbisect-ca.crt");
        let err =
            TlsSettings::with_root_cert(SslMode::VerifyFull, Some(missing.clone())).unwrap_err();
        assert!(err.contains("no CA file"), "{err}");
        let settings = TlsSettings::with_root_cert(SslMode::Require, Some(missing)).unwrap();
        assert!(settings.root_cert.is_none() && settings.roots().is_none());
        let err = TlsSettings::with_root_cert(SslMode::Prefer, Some("system".into())).unwrap_err();
        assert!(err.contains("sslrootcert=system"), "{err}");
    }

    #[test]
    fn a_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.crt");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let err = TlsSettings::with_root_cert(SslMode::VerifyCa, Some(path)).unwrap_err();
        assert!(err.contains("no certificate in it"), "{err}");
    }
}
