use super::*;

#[test]
fn captures_stdout_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = run_command("echo hello; echo oops >&2; exit 3", dir.path(), &[], None).unwrap();
    let CommandOutcome::Exited {
        code,
        stdout,
        stderr_tail,
        ..
    } = outcome
    else {
        panic!("timed out");
    };
    assert_eq!(code, Some(3));
    assert_eq!(stdout, b"hello\n");
    assert_eq!(stderr_tail, "oops\n");
}

#[test]
fn input_reaches_the_commands_stdin_and_a_command_that_reads_none_ends() {
    let dir = tempfile::tempdir().unwrap();
    let report = b"To: lab@example.org\n\nthe report\n".to_vec();
    let outcome = run_command_with_input("cat", dir.path(), &[], None, report.clone()).unwrap();
    assert!(
        matches!(&outcome, CommandOutcome::Exited { code: Some(0), stdout, .. } if *stdout == report),
        "{outcome:?}"
    );
    // Larger than a pipe holds, to a command that never reads it.
    let large = vec![b'x'; 1 << 20];
    let outcome = run_command_with_input("exit 3", dir.path(), &[], None, large).unwrap();
    assert!(
        matches!(outcome, CommandOutcome::Exited { code: Some(3), .. }),
        "{outcome:?}"
    );
}

#[test]
fn a_hung_group_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // The grandchild keeps the pipe open: only killing the group ends it.
    let outcome = run_command(
        "sleep 30 & sleep 30",
        dir.path(),
        &[],
        Some(Duration::from_millis(300)),
    )
    .unwrap();
    assert_eq!(outcome, CommandOutcome::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn output_is_kept_when_a_daemon_holds_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    // The grandchild outlives the command with stdout open: what the
    // command printed is still taken, without waiting for the daemon.
    let outcome = run_command(
        "sleep 8 & echo '{\"record\": 1}'; echo done >&2",
        dir.path(),
        &[],
        Some(Duration::from_secs(30)),
    )
    .unwrap();
    let CommandOutcome::Exited {
        code,
        stdout,
        stderr_tail,
        ..
    } = outcome
    else {
        panic!("timed out");
    };
    assert_eq!(code, Some(0));
    assert_eq!(stdout, b"{\"record\": 1}\n");
    assert_eq!(stderr_tail, "done\n");
}

#[test]
fn a_reader_that_first_runs_after_the_command_ended_takes_everything() {
    // The command wrote more than one read takes and ended; a process
    // it left behind holds the pipe open. The reading thread of a
    // loaded machine may first run only now: it still takes all of
    // it, and returns without waiting for the daemon.
    let (reader, mut writer) = std::io::pipe().unwrap();
    let printed: Vec<u8> = (0..40_000u32).map(|idx| (idx % 251) as u8).collect();
    std::io::Write::write_all(&mut writer, &printed).unwrap();
    let bytes = Mutex::new(Kept {
        keep: Keep::Head(MAX_STDOUT_BYTES),
        bytes: Vec::new(),
        dropped: false,
    });
    let ended = AtomicBool::new(true);
    read_pipe(reader, &bytes, &ended);
    assert_eq!(bytes.into_inner().unwrap().bytes, printed);
    drop(writer);
}

#[test]
fn output_larger_than_the_pipe_is_read_while_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    // 300 kB does not fit a pipe: a command whose output were read
    // only at its end would never end.
    let outcome = run_command(
        "sleep 8 & head -c 300000 /dev/zero | tr '\\0' x",
        dir.path(),
        &[],
        Some(Duration::from_secs(30)),
    )
    .unwrap();
    let CommandOutcome::Exited { code, stdout, .. } = outcome else {
        panic!("timed out");
    };
    assert_eq!(code, Some(0));
    assert_eq!(stdout.len(), 300_000);
    assert!(stdout.iter().all(|byte| *byte == b'x'));
}

#[test]
fn a_live_group_in_the_marker_blocks_a_second_command() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("running");
    let mut sleeper =
        std::os::unix::process::CommandExt::process_group(Command::new("sleep").arg("30"), 0)
            .spawn()
            .unwrap();
    std::fs::write(&marker, format!("{}\n", sleeper.id())).unwrap();
    let err = run_command_marked("touch ran", dir.path(), &[], None, Some(&marker)).unwrap_err();
    assert!(matches!(err, RunnerError::StillRunning { .. }), "{err}");
    assert!(!dir.path().join("ran").exists());
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    // A dead group is stale: the command runs and the marker goes.
    let outcome = run_command_marked("touch ran", dir.path(), &[], None, Some(&marker)).unwrap();
    assert!(matches!(
        outcome,
        CommandOutcome::Exited { code: Some(0), .. }
    ));
    assert!(dir.path().join("ran").exists());
    assert!(!marker.exists());
}

#[test]
fn missing_programs_are_found_before_running() {
    let dir = tempfile::tempdir().unwrap();
    assert!(check_command("sh -c true", dir.path()).is_ok());
    let err = check_command("no-such-program-xyz --flag", dir.path()).unwrap_err();
    assert!(err.to_string().contains("no-such-program-xyz"));
    assert!(check_command("./build.sh", dir.path()).is_err());
    std::fs::write(dir.path().join("build.sh"), "true").unwrap();
    assert!(check_command("./build.sh", dir.path()).is_ok());
}

#[test]
fn stdout_past_its_cap_is_read_dropped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let command = format!(
        "head -c {} /dev/zero; echo done >&2",
        MAX_STDOUT_BYTES + 5000
    );
    let outcome = run_command(&command, dir.path(), &[], Some(Duration::from_secs(120))).unwrap();
    let CommandOutcome::Exited {
        code,
        stdout,
        stdout_cut,
        stderr_tail,
    } = outcome
    else {
        panic!("timed out");
    };
    assert_eq!(code, Some(0));
    assert_eq!(stdout.len(), MAX_STDOUT_BYTES);
    assert!(stdout_cut);
    assert_eq!(stderr_tail, "done\n");
}
