//! Test harness: runs the built `paddock-guest serve` over a socketpair and
//! speaks the protocol to it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use paddock_proto::{
    ErrorCode, ErrorInfo, Event, ExecSpec, ExitInfo, FrameReader, FrameWriter, GuestFrame,
    GuestMessage, HostFrame, OutputStream, PROTOCOL_VERSION, Reply, Request, StdinMode,
};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Longest any single frame may take to arrive before a test fails.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Guest {
    child: Child,
    reader: Option<FrameReader<OwnedReadHalf>>,
    writer: Option<FrameWriter<OwnedWriteHalf>>,
    stash: HashMap<u64, VecDeque<(GuestMessage, Vec<u8>)>>,
    /// Pids from `Started` events already handed out, by request id.
    started: HashMap<u64, u32>,
    next_id: u64,
    /// Grant stream credit for every event read, as a host that keeps up does.
    pub grant_credit: bool,
    /// Canonical workspace root the guest serves.
    pub root: PathBuf,
    _workspace: tempfile::TempDir,
}

/// Everything one `Exec` produced.
#[derive(Debug)]
pub struct ExecOutcome {
    pub pid: u32,
    /// Output events in arrival order, consecutive chunks of a stream merged.
    pub chunks: Vec<(OutputStream, Vec<u8>)>,
    pub exit: ExitInfo,
}

impl ExecOutcome {
    pub fn stream(&self, which: OutputStream) -> Vec<u8> {
        self.chunks
            .iter()
            .filter(|(s, _)| *s == which)
            .flat_map(|(_, d)| d.clone())
            .collect()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stream(OutputStream::Stdout)).into_owned()
    }
}

pub fn shell(script: &str) -> ExecSpec {
    ExecSpec {
        shell: Some(script.to_string()),
        ..ExecSpec::default()
    }
}

pub fn argv(args: &[&str]) -> ExecSpec {
    ExecSpec {
        argv: args.iter().map(|a| a.to_string()).collect(),
        ..ExecSpec::default()
    }
}

impl Guest {
    /// A guest over a fresh temporary workspace, greeted.
    pub async fn start() -> Guest {
        Self::start_with(&[]).await
    }

    pub async fn start_with(extra_args: &[&str]) -> Guest {
        let mut guest = Self::spawn(extra_args);
        let reply = guest
            .call(
                Request::Hello {
                    version: PROTOCOL_VERSION,
                },
                &[],
            )
            .await;
        assert!(
            matches!(
                reply,
                Ok((
                    Reply::Hello {
                        version: PROTOCOL_VERSION,
                        ..
                    },
                    _
                ))
            ),
            "{reply:?}"
        );
        guest
    }

    /// A guest that has not been greeted yet.
    pub fn spawn(extra_args: &[&str]) -> Guest {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path().canonicalize().unwrap();
        let (host_end, guest_end) = std::os::unix::net::UnixStream::pair().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_paddock-guest"))
            .args(["--log", "warn"])
            .args(extra_args)
            .arg("serve")
            .arg("--workspace")
            .arg(&root)
            .stdin(Stdio::from(OwnedFd::from(guest_end)))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        host_end.set_nonblocking(true).unwrap();
        let stream = tokio::net::UnixStream::from_std(host_end).unwrap();
        let (reader, writer) = stream.into_split();
        Guest {
            child,
            reader: Some(FrameReader::new(reader)),
            writer: Some(FrameWriter::new(writer)),
            stash: HashMap::new(),
            started: HashMap::new(),
            next_id: 1,
            grant_credit: true,
            root,
            _workspace: workspace,
        }
    }

    /// Pid of the process the test started: the reaper the agent forked from.
    pub fn reaper_pid(&self) -> u32 {
        self.child.id()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn abs(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }

    pub fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub async fn send(&mut self, request: Request, payload: &[u8]) -> u64 {
        let id = self.fresh_id();
        self.send_as(id, request, payload).await;
        id
    }

    pub async fn send_as(&mut self, id: u64, request: Request, payload: &[u8]) {
        let frame = HostFrame { id, request };
        self.writer
            .as_mut()
            .unwrap()
            .write_message(&frame, payload)
            .await
            .unwrap();
    }

    /// Writes raw bytes, for malformed frames.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer
            .as_mut()
            .unwrap()
            .write_encoded(bytes)
            .await
            .unwrap();
    }

    /// The next frame from the wire, whatever request it answers; None at EOF.
    pub async fn next_frame(&mut self) -> Option<(GuestFrame, Vec<u8>)> {
        let reader = self.reader.as_mut().unwrap();
        let raw = tokio::time::timeout(FRAME_TIMEOUT, reader.read_frame())
            .await
            .expect("guest did not answer in time")
            .expect("reading a frame")?;
        let frame: GuestFrame = raw.decode().expect("decoding a guest frame");
        if self.grant_credit && !frame.message.is_final() && !raw.payload.is_empty() {
            let credit = Request::StreamCredit {
                target: frame.id,
                bytes: raw.payload.len() as u64,
            };
            self.send(credit, &[]).await;
        }
        Some((frame, raw.payload))
    }

    /// The next frame for request `id`; frames of other requests are kept.
    pub async fn next_for(&mut self, id: u64) -> (GuestMessage, Vec<u8>) {
        let (message, payload) = self.next_for_inner(id).await;
        if let GuestMessage::Event(Event::Started { pid }) = &message {
            assert!(
                self.started.insert(id, *pid).is_none(),
                "two Started events"
            );
        }
        (message, payload)
    }

    async fn next_for_inner(&mut self, id: u64) -> (GuestMessage, Vec<u8>) {
        if let Some(frame) = self.stash.get_mut(&id).and_then(VecDeque::pop_front) {
            return frame;
        }
        loop {
            let (frame, payload) = self.next_frame().await.expect("connection closed");
            if frame.id == id {
                return (frame.message, payload);
            }
            self.stash
                .entry(frame.id)
                .or_default()
                .push_back((frame.message, payload));
        }
    }

    /// The final answer of request `id`, skipping its events.
    pub async fn finish_of(&mut self, id: u64) -> Result<(Reply, Vec<u8>), ErrorInfo> {
        loop {
            match self.next_for(id).await {
                (GuestMessage::Event(_), _) => continue,
                (GuestMessage::Reply(reply), payload) => return Ok((reply, payload)),
                (GuestMessage::Error(error), _) => return Err(error),
            }
        }
    }

    pub async fn call(
        &mut self,
        request: Request,
        payload: &[u8],
    ) -> Result<(Reply, Vec<u8>), ErrorInfo> {
        let id = self.send(request, payload).await;
        self.finish_of(id).await
    }

    /// Calls and expects `Reply::Ok`.
    pub async fn ok(&mut self, request: Request) {
        let reply = self.call(request, &[]).await;
        assert!(matches!(reply, Ok((Reply::Ok, _))), "{reply:?}");
    }

    /// Calls and returns the error code (panics on success).
    pub async fn error(&mut self, request: Request, payload: &[u8]) -> ErrorInfo {
        match self.call(request.clone(), payload).await {
            Err(error) => error,
            Ok(reply) => panic!("{request:?} succeeded: {reply:?}"),
        }
    }

    pub async fn error_code(&mut self, request: Request) -> ErrorCode {
        self.error(request, &[]).await.code
    }

    /// Collects an exec's events and final reply.
    pub async fn collect_exec(&mut self, id: u64) -> Result<ExecOutcome, ErrorInfo> {
        let mut chunks: Vec<(OutputStream, Vec<u8>)> = Vec::new();
        loop {
            match self.next_for(id).await {
                (GuestMessage::Event(Event::Started { .. }), _) => {
                    assert!(chunks.is_empty(), "output before Started");
                }
                (GuestMessage::Event(Event::Output { stream }), data) => {
                    assert!(self.started.contains_key(&id), "output before Started");
                    match chunks.last_mut() {
                        Some((last, bytes)) if *last == stream => bytes.extend(data),
                        _ => chunks.push((stream, data)),
                    }
                }
                (GuestMessage::Reply(Reply::Exited(exit)), _) => {
                    return Ok(ExecOutcome {
                        pid: *self.started.get(&id).expect("Exited without Started"),
                        chunks,
                        exit,
                    });
                }
                (GuestMessage::Reply(other), _) => panic!("unexpected reply {other:?}"),
                (GuestMessage::Event(other), _) => panic!("{other:?} event for an exec"),
                (GuestMessage::Error(error), _) => return Err(error),
            }
        }
    }

    pub async fn exec(&mut self, spec: ExecSpec) -> ExecOutcome {
        self.try_exec(spec, &[]).await.unwrap()
    }

    pub async fn try_exec(
        &mut self,
        spec: ExecSpec,
        stdin: &[u8],
    ) -> Result<ExecOutcome, ErrorInfo> {
        let id = self.send(Request::Exec(spec), stdin).await;
        self.collect_exec(id).await
    }

    /// Runs `spec` with `stdin` as its payload.
    pub async fn exec_with_stdin(&mut self, mut spec: ExecSpec, stdin: &[u8]) -> ExecOutcome {
        spec.stdin = StdinMode::Payload;
        self.try_exec(spec, stdin).await.unwrap()
    }

    /// Closes the connection and waits for the guest to exit; returns its status.
    pub fn close_and_wait(&mut self) -> std::process::ExitStatus {
        self.reader = None;
        self.writer = None;
        wait_with_timeout(&mut self.child, Duration::from_secs(10)).expect("guest did not exit")
    }

    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        wait_with_timeout(&mut self.child, Duration::from_secs(10)).expect("guest did not exit")
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.reader = None;
        self.writer = None;
        if wait_with_timeout(&mut self.child, Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn wait_with_timeout(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// True once `pid` no longer runs (gone, or a zombie nobody reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

pub async fn eventually_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// Parent pid of a live process.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Sorted names in a host directory (to prove nothing was written there).
pub fn host_listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}
