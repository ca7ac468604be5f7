//! The test binary re-run as a helper process.
//!
//! A parent test spawns `std::env::current_exe()` with
//! `--exact <child test> --nocapture` and the role in
//! [`ROLE`]: the harness then runs only that one test function, which sees
//! the role and serves commands, one line each, over stdin and stdout. In a
//! normal run the variable is unset and the child test returns at once, a
//! passing no-op.
//!
//! Answers are written as `@@ <answer>` lines straight to the process's
//! stdout, so the harness's own output ("running 1 test", "test child ...")
//! never mixes with them; the parent reads them on a thread and waits with a
//! timeout, so a hung child fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// The variable that names a child's role.
pub const ROLE: &str = "LOOMFENCE_SQLITE_CHILD";

/// The variable that names the database file a child works on.
pub const PATH: &str = "LOOMFENCE_SQLITE_PATH";

/// The prefix of every protocol line.
const MARK: &str = "@@ ";

/// How long the parent waits for one answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// The role this process was started in, if it is a child.
pub fn role() -> Option<String> {
    std::env::var(ROLE).ok().filter(|role| !role.is_empty())
}

/// The database file a child works on.
pub fn path() -> PathBuf {
    PathBuf::from(std::env::var_os(PATH).expect("a child is given its database path"))
}

/// Writes one answer line and flushes it, bypassing the harness's capture.
pub fn say(answer: &str) {
    let line = format!("{MARK}{}\n", answer.replace('\n', " "));
    let mut out = std::io::stdout().lock();
    out.write_all(line.as_bytes())
        .and_then(|()| out.flush())
        .expect("the parent reads our answers");
}

/// Answers every command line on stdin with `handle`'s answer, until the
/// parent closes stdin.
pub fn serve(mut handle: impl FnMut(&str) -> String) {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("reads a command");
        if !line.is_empty() {
            say(&handle(&line));
        }
    }
}

/// Reads one command line from stdin (`None` once the parent closed it).
pub fn command() -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) => None,
        Ok(_) => Some(line.trim_end().to_owned()),
        Err(e) => panic!("reads a command: {e}"),
    }
}

/// A helper process, seen from the parent.
#[derive(Debug)]
pub struct Child {
    /// For messages: the role and the pid.
    name: String,
    /// The process.
    process: std::process::Child,
    /// Its stdin; `None` once closed.
    input: Option<ChildStdin>,
    /// Its protocol lines, read on a thread.
    lines: Receiver<String>,
    /// Whether it has been waited for.
    reaped: bool,
}

impl Child {
    /// Runs test `test` of this binary as a child in `role` on the database
    /// at `path`, with its working directory in `dir`.
    pub fn spawn(test: &str, role: &str, path: &Path, dir: &Path) -> Self {
        let exe = std::env::current_exe().expect("the test binary's path");
        let mut process = Command::new(exe)
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(ROLE, role)
            .env(PATH, path)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawns the test binary as a child");
        let name = format!("child {role} (pid {})", process.id());
        let input = process.stdin.take();
        let output = process.stdout.take().expect("the child's stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find(MARK)
                    && send.send(line[at + MARK.len()..].to_owned()).is_err()
                {
                    break;
                }
            }
        });
        Self {
            name,
            process,
            input,
            lines,
            reaped: false,
        }
    }

    /// The child's name for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sends one command line, in one write.
    pub fn send(&mut self, command: &str) {
        let line = format!("{command}\n");
        let input = self.input.as_mut().expect("the child's stdin is open");
        input
            .write_all(line.as_bytes())
            .and_then(|()| input.flush())
            .unwrap_or_else(|e| panic!("{}: sending {command:?}: {e}", self.name));
    }

    /// The next answer; fails the test if the child dies or stays silent.
    pub fn recv(&self) -> String {
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("{}: no answer within {ANSWER_TIMEOUT:?}", self.name)
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("{}: exited without answering", self.name)
            }
        }
    }

    /// Waits for the child's `READY`.
    pub fn ready(&self) {
        let line = self.recv();
        assert_eq!(line, "READY", "{}: expected READY", self.name);
    }

    /// Kills the child with SIGKILL and reaps it; returns how it ended and
    /// every answer it wrote before it died, in order.
    pub fn kill(&mut self) -> (ExitStatus, Vec<String>) {
        self.process
            .kill()
            .unwrap_or_else(|e| panic!("{}: kill: {e}", self.name));
        let status = self.wait();
        (status, self.drain())
    }

    /// Closes stdin and waits for the child to exit.
    pub fn finish(&mut self) -> ExitStatus {
        drop(self.input.take());
        self.wait()
    }

    /// Waits for the child to exit (it must be on its way).
    pub fn wait(&mut self) -> ExitStatus {
        let status = self
            .process
            .wait()
            .unwrap_or_else(|e| panic!("{}: wait: {e}", self.name));
        self.reaped = true;
        status
    }

    /// Every answer still queued once the child's stdout has closed.
    pub fn drain(&self) -> Vec<String> {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut rest = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => rest.push(line),
                Err(RecvTimeoutError::Disconnected) => return rest,
                Err(RecvTimeoutError::Timeout) => {
                    panic!("{}: stdout stayed open after exit", self.name)
                }
            }
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.reaped {
            return;
        }
        drop(self.input.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.process.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // Ours, by its own id: a child that ignored a closed stdin.
        let _ignored = self.process.kill();
        let _ignored = self.process.wait();
    }
}
