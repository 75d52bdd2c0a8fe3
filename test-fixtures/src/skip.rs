//! The one way a test gives up where it cannot run, and the switch that
//! says when it may not.
//!
//! [`skip`] prints `TEST skipped: WHY` on stderr, past the test
//! harness's capture so that the suite's output shows every skip, and
//! returns: a test that needs root (network namespaces, mounts, another
//! user), the VM tools and kernels, PostgreSQL, chromium or ethtool says
//! so and passes on a machine without them.
//!
//! Under `NETBISECT_SLOW_TESTS=1` ([`slow_tests`]), as `.ci/run` runs
//! the suite, a missing tool or privilege is a failure instead: CI runs
//! as root and installs every tool a test here gives up without (qemu,
//! busybox-static, xz-utils, kmod, the two Debian kernels, PostgreSQL,
//! openssl, chromium, iproute2, ethtool), so a skip there would only hide a test
//! that no longer runs. No test of the workspace gives up for a reason
//! CI lacks too (KVM is tried and TCG taken, never skipped for); one
//! that had to would say so without this function.
//!
//! The slow tests themselves run only under the switch:
//! [`unless_slow_tests`] gives them up, visibly, without it.

use std::io::Write;

/// The switch of the slow tests, `1` to turn them on.
pub const SLOW_TESTS_VARIABLE: &str = "NETBISECT_SLOW_TESTS";

/// True when the slow tests are switched on (`NETBISECT_SLOW_TESTS=1`),
/// as CI runs the suite: the soak of serve and the slowest VM tests run,
/// and [`skip`] fails.
pub fn slow_tests() -> bool {
    std::env::var(SLOW_TESTS_VARIABLE).is_ok_and(|value| value == "1")
}

/// Gives up the running test because `why`, a tool or privilege missing
/// here that CI has: says so on stderr and returns, for the test to
/// return too; under `NETBISECT_SLOW_TESTS=1`, fails the test instead.
#[track_caller]
pub fn skip(why: impl std::fmt::Display) {
    skip_to(&mut std::io::stderr(), &why.to_string(), slow_tests());
}

/// True, after saying that the running test skipped, when the slow tests
/// are switched off: `if unless_slow_tests() { return; }` opens a slow
/// test.
pub fn unless_slow_tests() -> bool {
    if slow_tests() {
        return false;
    }
    let why = format!("slow, set {SLOW_TESTS_VARIABLE}=1 to run it");
    skip_to(&mut std::io::stderr(), &why, false);
    true
}

/// [`skip`], saying so on `out`. Written to stderr itself, not through
/// `eprintln!`, whose output the test harness captures and shows only
/// for a failing test.
#[track_caller]
fn skip_to(out: &mut impl Write, why: &str, slow: bool) {
    assert!(
        !slow,
        "{why}: with {SLOW_TESTS_VARIABLE}=1 this test must run, as in CI \
         (.ci/run runs as root and installs every tool the tests need)"
    );
    let current = std::thread::current();
    // The harness names each test's thread after the test.
    let test = current.name().unwrap_or("a test");
    let _ = writeln!(out, "{test} skipped: {why}");
}

#[cfg(test)]
mod tests {
    use super::skip_to;

    #[test]
    fn a_skip_says_why_and_fails_when_the_slow_tests_are_on() {
        let mut out = Vec::new();
        skip_to(&mut out, "no chromium", false);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "skip::tests::a_skip_says_why_and_fails_when_the_slow_tests_are_on skipped: \
             no chromium\n"
        );
        let mut out = Vec::new();
        let failed = std::panic::catch_unwind(move || skip_to(&mut out, "no chromium", true));
        let message = failed.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("no chromium: with NETBISECT_SLOW_TESTS=1"),
            "{message}"
        );
    }
}
