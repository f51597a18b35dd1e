//! The server's stdin and stdout need not be a pair of pipes: a file on
//! either side, or one socket for both (inetd, socat, systemd socket
//! activation), must work just as well.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::*;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn server(db: &std::path::Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--db").arg(db).env("RUST_LOG", "warn").stderr(Stdio::null());
    cmd
}

/// Parse every line as a JSON-RPC message and answer the ids, in order.
fn ids(text: &str) -> Vec<u64> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|_| panic!("not JSON on stdout: {l}"));
            assert_eq!(v["jsonrpc"], "2.0", "{l}");
            assert!(v.get("error").is_none(), "{l}");
            v["id"].as_u64().expect("an answer")
        })
        .collect()
}

/// Wait (at most 20 s) until `path` holds `n` lines.
fn wait_for_lines(path: &std::path::Path, n: usize) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= n {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} holds no {n} lines:\n{text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Wait (at most 20 s) until process `pid` cannot write to its stdout
/// pipe, as a reader that reads nothing leaves it: a write end of that
/// pipe, opened anew through /proc, is not writable once the pipe is full.
/// Linux; elsewhere, half a second.
fn until_stdout_full(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        use std::os::unix::fs::OpenOptionsExt;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let end = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(format!("/proc/{pid}/fd/1"))
                .unwrap_or_else(|e| panic!("the server's stdout ({e}): gone before the pipe was full?"));
            let mut fds = [PollFd::new(&end, PollFlags::OUT)];
            poll(&mut fds, Some(&Timespec::default())).expect("poll");
            if !fds[0].revents().contains(PollFlags::OUT) {
                return;
            }
            assert!(Instant::now() < deadline, "the answers never filled the pipe");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn stdout_redirected_to_a_file() {
    let (dir, db) = temp_db();
    let out_path = dir.path().join("out.jsonl");
    let mut child = server(&db)
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{INIT}").unwrap();
    wait_for_lines(&out_path, 1);
    writeln!(stdin, "{INITIALIZED}").unwrap();
    for id in 2..5 {
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#).unwrap();
        wait_for_lines(&out_path, id as usize);
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(ids(&std::fs::read_to_string(&out_path).unwrap()), [1, 2, 3, 4]);
}

#[test]
fn stdin_from_a_file_with_a_slow_reader() {
    let (dir, db) = temp_db();
    let in_path = dir.path().join("in.jsonl");
    let mut requests = format!("{INIT}\n{INITIALIZED}\n");
    for id in 2..=61 {
        requests.push_str(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"thoughtbox://cipher"}}}}"#
        ));
        requests.push('\n');
    }
    std::fs::write(&in_path, requests).unwrap();
    let mut child = server(&db)
        .stdin(std::fs::File::open(&in_path).unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The answers fill the pipe before anything is read.
    until_stdout_full(child.id());
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(child.wait().unwrap().success());
    let mut got = ids(&out);
    got.sort();
    assert_eq!(got, (1..=61).collect::<Vec<u64>>());
}

/// A file of requests whose last line has no newline: that request is
/// answered (and its thought recorded) too.
#[test]
fn a_last_request_without_a_newline_is_answered() {
    let (dir, db) = temp_db();
    let in_path = dir.path().join("in.jsonl");
    let call = |id: u32, operation: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"thoughtbox_gateway","arguments":{{"operation":"{operation}","args":{args}}}}}}}"#
        )
    };
    // Requests run concurrently: no stage to reach first.
    let requests = [
        INIT.to_string(),
        INITIALIZED.to_string(),
        call(2, "get_state", "{}"),
        call(3, "thought", r#"{"thought":"the last line","nextThoughtNeeded":true}"#),
    ]
    .join("\n");
    std::fs::write(&in_path, requests).unwrap();
    let out = server(&db)
        .arg("--no-stages")
        .stdin(std::fs::File::open(&in_path).unwrap())
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut got = ids(&String::from_utf8(out.stdout).unwrap());
    got.sort();
    assert_eq!(got, [1, 2, 3]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let text: String = conn
        .query_row("SELECT thought FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(text, "the last line");
}

/// As inetd starts a server: one socket as stdin, stdout and stderr. Logs
/// (debug level here) must not reach the client inside the protocol.
#[test]
fn one_socket_for_stdin_stdout_and_stderr() {
    let (_dir, db) = temp_db();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = server(&db)
        .env("RUST_LOG", "debug")
        .stdin(std::os::fd::OwnedFd::from(theirs.try_clone().unwrap()))
        .stdout(std::os::fd::OwnedFd::from(theirs.try_clone().unwrap()))
        .stderr(std::os::fd::OwnedFd::from(theirs))
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut reader = BufReader::new(ours.try_clone().unwrap());
    let mut writer = ours;
    let mut answer = || {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        ids(&line)[0]
    };
    writeln!(writer, "{INIT}").unwrap();
    assert_eq!(answer(), 1);
    writeln!(writer, "{INITIALIZED}").unwrap();
    writeln!(writer, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
    assert_eq!(answer(), 2);
    writer.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(child.wait().unwrap().success());
}

/// The server leaves stdout as it found it: blocking. The flag belongs to
/// the pipe end the parent shares (a shell pipeline's next command writes
/// to it), and a non-blocking pipe makes its writes fail with EAGAIN.
#[test]
fn stdout_is_left_blocking() {
    let (dir, db) = temp_db();
    let in_path = dir.path().join("in.jsonl");
    std::fs::write(&in_path, format!("{INIT}\n{INITIALIZED}\n")).unwrap();
    let (mut reader, writer) = std::io::pipe().unwrap();
    let ours = writer.try_clone().unwrap();
    let mut child = server(&db)
        .stdin(std::fs::File::open(&in_path).unwrap())
        .stdout(writer)
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    // Nobody reads: a blocking write of more than the pipe holds waits,
    // a non-blocking one fails at once.
    let (tx, rx) = std::sync::mpsc::channel();
    let filler = std::thread::spawn(move || {
        let mut ours = ours;
        let _ = tx.send(ours.write_all(&vec![b'x'; 4 << 20]).map_err(|e| e.kind()));
    });
    let early = rx.recv_timeout(Duration::from_millis(500));
    assert!(early.is_err(), "the write did not block: {early:?}");
    // Let it finish: drain the pipe.
    let mut sink = Vec::new();
    let drain = std::thread::spawn(move || reader.read_to_end(&mut sink).map(|_| sink.len()));
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), Ok(()));
    filler.join().unwrap();
    assert!(drain.join().unwrap().unwrap() >= 4 << 20);
}

/// ...and a stdin or stdout that came non-blocking stays non-blocking: the
/// parent that shares it set the flag for itself.
#[test]
fn nonblocking_stdin_and_stdout_stay_nonblocking() {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let (dir, db) = temp_db();
    let (reader, writer) = std::io::pipe().unwrap();
    let (in_reader, mut in_writer) = std::io::pipe().unwrap();
    let (ours_out, ours_in) = (writer.try_clone().unwrap(), in_reader.try_clone().unwrap());
    for fd in [&ours_out as &dyn std::os::fd::AsFd, &ours_in] {
        fcntl_setfl(fd.as_fd(), OFlags::NONBLOCK).unwrap();
    }
    let mut child = server(&db).stdin(in_reader).stdout(writer).spawn().unwrap();
    in_writer
        .write_all(format!("{INIT}\n{INITIALIZED}\n").as_bytes())
        .unwrap();
    drop(in_writer);
    let mut answers = String::new();
    BufReader::new(reader).read_line(&mut answers).unwrap();
    assert_eq!(ids(&answers), [1]);
    assert!(child.wait().unwrap().success());
    for fd in [&ours_out as &dyn std::os::fd::AsFd, &ours_in] {
        assert!(fcntl_getfl(fd.as_fd()).unwrap().contains(OFlags::NONBLOCK));
    }
    drop(dir);
}
