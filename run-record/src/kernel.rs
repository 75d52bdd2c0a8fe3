//! What a kernel release string says about the commit it was built from.
//!
//! A kernel built with `CONFIG_LOCALVERSION_AUTO=y` from a git tree carries
//! the output of `scripts/setlocalversion` at the end of its release:
//! `-<commits past the tag>-g<abbreviated commit>`, then `-dirty` when the
//! tree had uncommitted changes; for example `6.8.0-rc1-00123-gabcdef123456`.
//! Distribution kernels (`6.1.0-18-amd64`) and plain tags (`6.8.0`) carry no
//! commit, and this module says so rather than guess.

use serde::{Deserialize, Serialize};

/// The parts of a kernel release string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelRelease {
    /// The release as given.
    pub release: String,
    /// Everything before the git suffix (tag plus any local version).
    pub base: String,
    /// Abbreviated commit id, when the release names one.
    pub commit: Option<String>,
    /// Commits past the tag, when the release says.
    pub commits_past_tag: Option<u32>,
    /// True when the tree was dirty at build time.
    pub dirty: bool,
}

/// Shortest abbreviation git produces.
const MIN_ABBREV: usize = 7;

/// Splits a kernel release (`uname -r`) into its parts.
pub fn parse_release(release: &str) -> KernelRelease {
    let release = release.trim();
    let mut tokens: Vec<&str> = release.split('-').collect();
    let dirty = tokens.len() > 1 && tokens.last() == Some(&"dirty");
    if dirty {
        tokens.pop();
    }
    let mut commit = None;
    let mut commits_past_tag = None;
    if tokens.len() > 1
        && let Some(hash) = tokens.last().and_then(|token| abbreviated_commit(token))
    {
        commit = Some(hash.to_string());
        tokens.pop();
        if tokens.len() > 1
            && let Some(count) = tokens.last().and_then(|token| commit_count(token))
        {
            commits_past_tag = Some(count);
            tokens.pop();
        }
    }
    KernelRelease {
        release: release.to_string(),
        base: tokens.join("-"),
        commit,
        commits_past_tag,
        dirty,
    }
}

fn abbreviated_commit(token: &str) -> Option<&str> {
    let hash = token.strip_prefix('g')?;
    let is_hash = (MIN_ABBREV..=40).contains(&hash.len())
        && hash
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    is_hash.then_some(hash)
}

fn commit_count(token: &str) -> Option<u32> {
    if token.is_empty() || !token.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(release: &str) -> (String, Option<String>, Option<u32>, bool) {
        let parsed = parse_release(release);
        (
            parsed.base,
            parsed.commit,
            parsed.commits_past_tag,
            parsed.dirty,
        )
    }

    #[test]
    fn release_candidate_with_commit() {
        assert_eq!(
            parts("6.8.0-rc1-00123-gabcdef123456"),
            (
                "6.8.0-rc1".into(),
                Some("abcdef123456".into()),
                Some(123),
                false
            )
        );
    }

    #[test]
    fn dirty_tree() {
        assert_eq!(
            parts("6.8.0-rc1-00123-gabcdef123456-dirty"),
            (
                "6.8.0-rc1".into(),
                Some("abcdef123456".into()),
                Some(123),
                true
            )
        );
        assert_eq!(parts("6.8.0-dirty"), ("6.8.0".into(), None, None, true));
    }

    #[test]
    fn local_version_before_the_git_suffix() {
        assert_eq!(
            parts("6.9.0-net-next-00007-g0123456789ab"),
            (
                "6.9.0-net-next".into(),
                Some("0123456789ab".into()),
                Some(7),
                false
            )
        );
    }

    #[test]
    fn plain_tags_carry_no_commit() {
        assert_eq!(parts("6.8.0"), ("6.8.0".into(), None, None, false));
        assert_eq!(parts("6.8.0-rc7"), ("6.8.0-rc7".into(), None, None, false));
        assert_eq!(parts("6.8.0+"), ("6.8.0+".into(), None, None, false));
    }

    #[test]
    fn distribution_kernels_carry_no_commit() {
        for release in [
            "6.1.0-18-amd64",
            "5.15.0-91-generic",
            "5.15.0-1051-gcp",
            "6.5.6-300.fc39.x86_64",
            "4.18.0-513.el8.x86_64",
        ] {
            let parsed = parse_release(release);
            assert_eq!(parsed.commit, None, "{release}");
            assert_eq!(parsed.base, release);
        }
    }

    #[test]
    fn older_suffix_without_count() {
        assert_eq!(
            parts("5.4.0-gdeadbee"),
            ("5.4.0".into(), Some("deadbee".into()), None, false)
        );
    }

    #[test]
    fn release_candidate_dirty_without_commit() {
        assert_eq!(
            parts("6.8.0-rc1-dirty"),
            ("6.8.0-rc1".into(), None, None, true)
        );
    }

    #[test]
    fn commit_after_a_plain_tag() {
        assert_eq!(
            parts("6.9.0-00042-g0123456789ab"),
            ("6.9.0".into(), Some("0123456789ab".into()), Some(42), false)
        );
        assert_eq!(
            parts("6.9.0-00042-g0123456789ab-dirty\n"),
            ("6.9.0".into(), Some("0123456789ab".into()), Some(42), true)
        );
    }

    #[test]
    fn hex_lookalikes_are_not_commits() {
        for release in [
            "6.8.0-gABCDEF1",                                   // git abbreviates in lower case
            "6.8.0-gabc123",                                    // shorter than git abbreviates
            "6.8.0-g0123456789abcdef0123456789abcdef012345678", // too long
            "g0123456789ab",                                    // nothing before the suffix
        ] {
            assert_eq!(parse_release(release).commit, None, "{release}");
        }
    }
}
