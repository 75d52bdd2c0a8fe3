//! A child that leads a process group of its own, with everything it
//! starts: killed together, and while it runs a SIGINT or SIGTERM kills
//! the whole group at once (see [`crate::interrupt`]).

use crate::interrupt::{self, Tracked};
use rustix::process::{Pid, Signal};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// How long the members of a killed group may take to be gone.
const GROUP_EXIT_WAIT: Duration = Duration::from_secs(5);

/// A child leading its own process group. Dropping it kills the group,
/// unless [`GroupChild::release`] let it be.
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    /// The group and its tracking, until it is killed or released.
    group: Option<(Pid, Tracked)>,
}

impl GroupChild {
    /// Starts `command` as the leader of a new process group, tracked by
    /// the interrupt handler.
    pub fn spawn(command: &mut Command) -> std::io::Result<GroupChild> {
        let child = command.process_group(0).spawn()?;
        // The leader's pid names the group (process_group(0)).
        let group = i32::try_from(child.id())
            .ok()
            .and_then(Pid::from_raw)
            .map(|group| (group, interrupt::track(group)));
        Ok(GroupChild { child, group })
    }

    /// The leader, to take its pipes or its id.
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's exit status, once it exited (the rest of the group may
    /// live on).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Kills the group, reaps the leader and waits (a few seconds at most)
    /// until no member of the group is left: a killed qemu, say, takes a
    /// moment to free its memory.
    pub fn kill(&mut self) {
        let Some((group, tracked)) = self.group.take() else {
            return;
        };
        // A group that is gone already only makes this fail with ESRCH.
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
        drop(tracked);
        let deadline = Instant::now() + GROUP_EXIT_WAIT;
        while has_live_member(group) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops tracking a group whose leader has exited, leaving whatever
    /// it started running (a daemon the command meant to leave).
    pub fn release(mut self) {
        self.group = None;
    }
}

/// Whether a process of `group` is still alive: one that is not a
/// zombie. A killed member whose parent had ended already waits as a
/// zombie until init reaps it (a second or more on some hosts); it holds
/// no memory and runs nothing, so it is not waited for. Read from
/// /proc/PID/stat (state, field 3; process group, field 5); without
/// /proc, signal 0 to the group says whether any member is left.
pub fn has_live_member(group: Pid) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return rustix::process::test_kill_process_group(group).is_ok();
    };
    let wanted = group.as_raw_nonzero().get();
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        if !name
            .to_string_lossy()
            .bytes()
            .all(|byte| byte.is_ascii_digit())
        {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            return false;
        };
        // The command (field 2) is in parentheses and may hold spaces:
        // the fields after it start past its last ')'.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|field| field.parse::<i32>().ok());
        pgrp == Some(wanted) && state != Some("Z") && state != Some("X")
    })
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kill_ends_the_whole_group() {
        let mut command = Command::new("sh");
        command.arg("-c").arg("sleep 30 & sleep 30");
        let mut child = GroupChild::spawn(&mut command).unwrap();
        let group = Pid::from_raw(i32::try_from(child.child().id()).unwrap()).unwrap();
        let started = Instant::now();
        child.kill();
        assert!(!has_live_member(group));
        assert!(started.elapsed() < GROUP_EXIT_WAIT);
    }
}
