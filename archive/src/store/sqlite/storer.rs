//! Who writes a file: the user this process runs as and the name of its
//! host, stored beside each run the file gains (`stored_by`,
//! `stored_from`). The file's permissions are what decides who may
//! write it; these say who did.

/// Who stores runs from this process: the user's name and the host's.
#[derive(Clone, Debug)]
pub(super) struct Storer {
    /// The effective user's name in the system's user database, or
    /// `uid N` where it has none.
    pub user: String,
    /// The host's name (`uname -n`); `None` where the system gives none.
    pub host: Option<String>,
}

impl Storer {
    /// This process's user and host.
    pub(super) fn of_this_process() -> Storer {
        let uid = rustix::process::geteuid().as_raw();
        let host = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        Storer {
            user: user_name(uid).unwrap_or_else(|| format!("uid {uid}")),
            host: Some(host).filter(|host| !host.is_empty()),
        }
    }
}

/// The name of user `uid` in the system's user database (the password
/// file, or a directory service the system is set up for), `None` where
/// it has no entry.
fn user_name(uid: u32) -> Option<String> {
    let mut buffer = vec![0u8; 4096];
    loop {
        // SAFETY: all-zero bytes are a valid `passwd` (null pointers and
        // zero ids); getpwuid_r fills it in.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to a live value of this frame, and the
        // buffer's length is the one given; the strings the entry points
        // to live in `buffer`, which outlives their use below.
        let status = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr().cast(),
                buffer.len(),
                &mut found,
            )
        };
        if status == libc::ERANGE && buffer.len() < 1 << 20 {
            buffer.resize(buffer.len() * 4, 0);
            continue;
        }
        if status != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success `pw_name` points to a NUL-terminated string
        // in `buffer`.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
        return Some(name.to_string_lossy().into_owned()).filter(|name| !name.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_is_the_one_the_process_runs_as() {
        let storer = Storer::of_this_process();
        assert!(!storer.user.is_empty());
        // root is named root on every system the tests run on; any other
        // user has the name the system gives it, or its uid.
        if rustix::process::geteuid().is_root() {
            assert_eq!(storer.user, "root");
        }
        assert!(storer.host.is_some());
    }

    #[test]
    fn a_uid_without_an_entry_has_no_name() {
        assert_eq!(user_name(u32::MAX - 7), None);
    }
}
