//! Chromium driven over the DevTools protocol on `--remote-debugging-pipe` (what
//! Puppeteer's `pipe: true` does): fd 3 carries commands to the browser, fd 4 its
//! answers and events, each JSON message ended by a NUL byte. No websocket and no
//! generated bindings: serde_json values. A reader thread splits the messages; the
//! caller sends a command and waits for its answer, keeping the events that came
//! in meanwhile. The browser runs in a process group of its own with a fresh
//! profile directory; dropping [`Browser`] kills the group and removes the
//! directory (every exit path, an error or Ctrl-C included), and the kernel kills
//! the browser if latscope dies first (`PR_SET_PDEATHSIG`). Never prints.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// What can go wrong driving the browser.
#[derive(Debug, thiserror::Error)]
pub enum CdpError {
    /// No browser binary.
    #[error(
        "no Chromium at {0}: install Debian's (apt-get install chromium) or name one with \
         --chromium PATH (or LATSCOPE_CHROMIUM)"
    )]
    Missing(PathBuf),
    /// The browser could not be started.
    #[error("cannot start {0}: {1}")]
    Spawn(PathBuf, std::io::Error),
    /// The pipe to it failed or closed (the browser exited).
    #[error("the browser closed its DevTools pipe (it exited{0})")]
    Closed(String),
    /// A command was answered with an error.
    #[error("DevTools {method}: {message}")]
    Command { method: String, message: String },
    /// The time bound (`--max-time`) or a command's own wait ran out.
    #[error("{0} did not finish in time")]
    Timeout(String),
    /// Ctrl-C or SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// I/O on the pipe or the profile directory.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// One message from the browser: an answer (`id`) or an event (`method`).
pub type Message = Value;

/// A running browser and its pipe.
pub struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Message>,
    next_id: u64,
    /// Events received while waiting for answers, oldest first.
    events: Vec<Message>,
    profile: PathBuf,
    /// The profile listed for removal should a panic end the process.
    _made: crate::cleanup::Made,
    stderr_tail: Arc<std::sync::Mutex<Vec<String>>>,
}

/// How to start the browser.
#[derive(Debug, Clone)]
pub struct Launch {
    pub binary: PathBuf,
    /// A fresh, empty directory for the profile (removed when the browser drops).
    pub profile: PathBuf,
    /// `--proxy-server` and `--proxy-bypass-list`: everything not bypassed goes to a
    /// proxy address that refuses connections, so it is never fetched.
    pub proxy: Option<(String, String)>,
    /// Accept any certificate (`-k`).
    pub insecure: bool,
    /// (host, address) pairs resolved so (`--host-resolver-rules`).
    pub resolve: Vec<(String, String)>,
}

/// The flags that keep the browser quiet and off the internet
/// (/work/shared/notes/browser.md).
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-breakpad",
    "--metrics-recording-only",
    "--mute-audio",
    "--remote-debugging-pipe",
    "--window-size=1350,940",
];

impl Browser {
    /// Starts the browser and checks the pipe answers.
    pub fn launch(l: &Launch, stop: &AtomicBool) -> Result<Browser, CdpError> {
        if !l.binary.is_file() {
            return Err(CdpError::Missing(l.binary.clone()));
        }
        let (cmd_read, cmd_write) = pipe()?;
        let (msg_read, msg_write) = pipe()?;
        let mut c = Command::new(&l.binary);
        c.args(FLAGS)
            .arg(format!("--user-data-dir={}", l.profile.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some((proxy, bypass)) = &l.proxy {
            c.arg(format!("--proxy-server={proxy}"))
                .arg(format!("--proxy-bypass-list={bypass}"));
        }
        if l.insecure {
            c.arg("--ignore-certificate-errors");
        }
        if !l.resolve.is_empty() {
            let rules: Vec<String> = l
                .resolve
                .iter()
                .map(|(h, a)| format!("MAP {h} {a}"))
                .collect();
            c.arg(format!("--host-resolver-rules={}", rules.join(",")));
        }
        c.arg("about:blank");
        let (r, w) = (cmd_read.into_raw_fd(), msg_write.into_raw_fd());
        // SAFETY: between fork and exec only async-signal-safe calls: dup2, setpgid,
        // prctl. The raw fds are valid in the child (inherited).
        unsafe {
            c.pre_exec(move || {
                // Out of the way first: r or w may be 3 or 4 themselves.
                let (r2, w2) = (
                    libc::fcntl(r, libc::F_DUPFD, 10),
                    libc::fcntl(w, libc::F_DUPFD, 10),
                );
                if r2 < 0 || w2 < 0 || libc::dup2(r2, 3) < 0 || libc::dup2(w2, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let spawned = c.spawn();
        // SAFETY: both were ours; the child has its own copies now.
        unsafe {
            drop(OwnedFd::from_raw_fd(r));
            drop(OwnedFd::from_raw_fd(w));
        }
        let mut child = spawned.map_err(|e| CdpError::Spawn(l.binary.clone(), e))?;
        let stderr_tail = Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(err) = child.stderr.take() {
            let tail = stderr_tail.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if t.len() >= 5 {
                        t.remove(0);
                    }
                    t.push(line);
                }
            });
        }
        let (tx, rx) = mpsc::channel();
        let reader = File::from(msg_read);
        std::thread::spawn(move || {
            let mut r = BufReader::new(reader);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match r.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if buf.last() == Some(&0) {
                            buf.pop();
                        }
                        if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                            if tx.send(v).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        let mut b = Browser {
            child,
            to_browser: File::from(cmd_write),
            from_browser: rx,
            next_id: 1,
            events: Vec::new(),
            profile: l.profile.clone(),
            _made: crate::cleanup::remember(&l.profile),
            stderr_tail,
        };
        b.call(
            None,
            "Browser.getVersion",
            json!({}),
            Duration::from_secs(20),
            stop,
        )?;
        Ok(b)
    }

    /// Sends `method` (to a session when given) and waits at most `limit` for its
    /// answer's `result`; events that arrive meanwhile are kept for [`Browser::events`].
    pub fn call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        limit: Duration,
        stop: &AtomicBool,
    ) -> Result<Value, CdpError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = Value::from(s);
        }
        let mut bytes = serde_json::to_vec(&msg).map_err(std::io::Error::from)?;
        bytes.push(0);
        if self.to_browser.write_all(&bytes).is_err() {
            return Err(self.closed());
        }
        let deadline = Instant::now() + limit;
        loop {
            let m = self.next_message(deadline, stop, method)?;
            if m.get("id").and_then(Value::as_u64) == Some(id) {
                if let Some(e) = m.get("error") {
                    return Err(CdpError::Command {
                        method: method.to_string(),
                        message: e["message"].as_str().unwrap_or("error").to_string(),
                    });
                }
                return Ok(m.get("result").cloned().unwrap_or(Value::Null));
            }
            if m.get("method").is_some() {
                self.events.push(m);
            }
        }
    }

    /// Waits until `until` says an event is the one wanted (it is kept with the
    /// others), or `deadline` passes (Ok(false)).
    pub fn wait_event(
        &mut self,
        deadline: Instant,
        stop: &AtomicBool,
        mut until: impl FnMut(&Message) -> bool,
    ) -> Result<bool, CdpError> {
        loop {
            let m = match self.next_message(deadline, stop, "the page") {
                Err(CdpError::Timeout(_)) => return Ok(false),
                other => other?,
            };
            if m.get("method").is_some() {
                let hit = until(&m);
                self.events.push(m);
                if hit {
                    return Ok(true);
                }
            }
        }
    }

    /// Takes the events received so far.
    pub fn take_events(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.events)
    }

    fn next_message(
        &mut self,
        deadline: Instant,
        stop: &AtomicBool,
        what: &str,
    ) -> Result<Message, CdpError> {
        loop {
            if stop.load(Ordering::SeqCst) {
                return Err(CdpError::Interrupted);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CdpError::Timeout(what.to_string()));
            }
            let slice = (deadline - now).min(Duration::from_millis(50));
            match self.from_browser.recv_timeout(slice) {
                Ok(m) => return Ok(m),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Err(self.closed()),
            }
        }
    }

    fn closed(&mut self) -> CdpError {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => format!(" with {s}"),
            _ => String::new(),
        };
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.join(" | "))
            .unwrap_or_default();
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; it said: {tail}")
        };
        CdpError::Closed(format!("{status}{tail}"))
    }

    /// The profile directory.
    pub fn profile(&self) -> &Path {
        &self.profile
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: kill(2) on the process group the child made for itself (setpgid in
        // pre_exec): only the browser and its helpers.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A pipe, both ends close-on-exec (the child gets its copies through dup2).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills two valid fds on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh fds we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A loopback port that refuses every connection (bound, never listening), held
/// open while the browser runs: the proxy for origins that are not allowed.
pub struct RefusingPort {
    fd: OwnedFd,
    pub port: u16,
}

impl RefusingPort {
    /// Binds 127.0.0.1:0 without listening.
    pub fn bind() -> std::io::Result<RefusingPort> {
        // SAFETY: plain socket(2)/bind(2)/getsockname(2) on a fd we own, with a
        // zeroed sockaddr_in of the right size.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            addr.sin_family = libc::AF_INET as libc::sa_family_t;
            addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            use std::os::fd::AsRawFd;
            if libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_in).cast(),
                len,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            let mut got: libc::sockaddr_in = std::mem::zeroed();
            let mut glen = len;
            if libc::getsockname(
                fd.as_raw_fd(),
                (&mut got as *mut libc::sockaddr_in).cast(),
                &mut glen,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(RefusingPort {
                fd,
                port: u16::from_be(got.sin_port),
            })
        }
    }

    /// Keeps the socket alive (it is only held).
    pub fn held(&self) -> bool {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd() >= 0
    }
}
