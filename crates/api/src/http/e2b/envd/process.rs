//! envd's `process.Process` service on Paddock's background processes. A
//! process's E2B pid is its Paddock handle: unique in the sandbox and never
//! reused, where a pid inside the sandbox may be. Output is followed from
//! the guest's ring (stdout and stderr told apart); the stream sends a
//! keepalive whenever a follow step waited without output, and ends with
//! `deadline_exceeded` once the call's `Connect-Timeout-Ms` passes, leaving
//! the process running (E2B's timeout bounds the connection, not the
//! command).

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::{ProcessOutput, SandboxId};
use paddock_proto::{ExitInfo, PtySize};

use super::connect::{
    self, CallShape, Code, ConnectError, request_envelopes, single_request, streaming, unary,
};
use super::paths::workspace_cwd;
use super::process_pb::{
    DataEvent, Empty, EndEvent, EventResponse, ListRequest, ListResponse, ProcessConfig,
    ProcessEvent, ProcessInfo, ProcessSelector, SelectRequest, SendInputRequest, SendSignalRequest,
    StartEvent, StartRequest, StreamInputRequest, UpdateRequest, data_event, process_event,
    process_input, process_selector, stream_input_request,
};
use crate::http::AppState;
use crate::http::e2b::auth::EnvdCaller;
use crate::http::streams::StreamSlot;
use crate::service::SandboxService;
use crate::service::commands::{ResizeTerminal, SendSignal, SignalName, StartProcess, WriteStdin};
use crate::service::sandboxes::{ProcessFollow, ProcessView};
use crate::text::Encoding;

/// One call's caller and shape, or the Connect error that refuses it.
fn call(state: &AppState, headers: &HeaderMap) -> Result<(EnvdCaller, CallShape), ConnectError> {
    let caller = EnvdCaller::from_headers(headers, state)
        .map_err(|refused| ConnectError::from(crate::http::e2b::error::E2bError::from(refused)))?;
    Ok((caller, CallShape::of(headers)?))
}

/// The shape to answer a refused call in: the request's, else unary JSON.
fn answer_error(headers: &HeaderMap, err: ConnectError) -> Response {
    match CallShape::of(headers) {
        Ok(shape) if shape.streaming => {
            streaming::<EventResponse, _>(shape, futures_util::stream::iter([Err(err)]))
        }
        _ => err.into_response(),
    }
}

/// The handle a selector names.
fn handle_of(selector: Option<ProcessSelector>) -> Result<u64, ConnectError> {
    match selector.and_then(|s| s.selector) {
        Some(process_selector::Selector::Pid(pid)) => Ok(u64::from(pid)),
        Some(process_selector::Selector::Tag(tag)) => Err(ConnectError::new(
            Code::NotFound,
            format!("process with tag {tag:?}: Paddock names processes by pid only"),
        )),
        None => Err(ConnectError::new(
            Code::InvalidArgument,
            "the request names no process (pid)",
        )),
    }
}

fn pid_of(handle: u64) -> u32 {
    u32::try_from(handle).unwrap_or(u32::MAX)
}

/// `Process/Start`: starts the process and streams its events.
pub async fn start(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match start_events(&state, &headers, body).await {
        Ok(response) => response,
        Err(err) => answer_error(&headers, err),
    }
}

async fn start_events(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ConnectError> {
    let (caller, shape) = call(state, headers)?;
    let request: StartRequest = single_request(shape, body).await?;
    let on_terminal = request.pty.is_some();
    let command = start_command(request.process, request.pty.and_then(|p| p.size))?;
    let slot = state.streams.take(&caller.tenant)?;
    let service = &state.service;
    let started = service
        .start_process(&caller.tenant, &caller.sandbox, command)
        .await?;
    // envd's stdin is closed unless asked for (absent: open, for old SDKs)
    if request.stdin == Some(false) && !on_terminal {
        let eof = WriteStdin {
            eof: true,
            ..WriteStdin::default()
        };
        service
            .write_process_stdin(&caller.tenant, &caller.sandbox, started.handle, eof)
            .await?;
    }
    let follow = service
        .follow_process(&caller.tenant, &caller.sandbox, started.handle, 0)
        .await?;
    let events = events_of(
        service.clone(),
        follow,
        slot,
        started.pty,
        connect::deadline(headers),
        true,
    );
    Ok(streaming(shape, events))
}

/// Paddock's command for envd's process config.
fn start_command(
    config: Option<ProcessConfig>,
    pty: Option<super::process_pb::PtySize>,
) -> Result<StartProcess, ConnectError> {
    let config = config
        .ok_or_else(|| ConnectError::new(Code::InvalidArgument, "the request has no process"))?;
    if config.cmd.is_empty() {
        return Err(ConnectError::new(
            Code::InvalidArgument,
            "the process has no cmd",
        ));
    }
    let cwd = config
        .cwd
        .as_deref()
        .filter(|cwd| !cwd.is_empty())
        .map(workspace_cwd);
    let pty = pty.map(|size| PtySize {
        rows: u16::try_from(size.rows).unwrap_or(u16::MAX),
        cols: u16::try_from(size.cols).unwrap_or(u16::MAX),
    });
    Ok(StartProcess {
        argv: std::iter::once(config.cmd).chain(config.args).collect(),
        shell: None,
        cwd,
        env: config.envs.into_iter().collect(),
        timeout_ms: None,
        pty,
    })
}

/// `Process/Connect`: streams a running process's events from now on.
pub async fn connect(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    match connect_events(&state, &headers, body).await {
        Ok(response) => response,
        Err(err) => answer_error(&headers, err),
    }
}

async fn connect_events(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ConnectError> {
    let (caller, shape) = call(state, headers)?;
    let request: SelectRequest = single_request(shape, body).await?;
    let handle = handle_of(request.process)?;
    let service = &state.service;
    let process = running_process(service, &caller.tenant, &caller.sandbox, handle).await?;
    let slot = state.streams.take(&caller.tenant)?;
    let follow = service
        .follow_process(
            &caller.tenant,
            &caller.sandbox,
            handle,
            process.output_bytes,
        )
        .await?;
    let events = events_of(
        service.clone(),
        follow,
        slot,
        process.pty,
        connect::deadline(headers),
        true,
    );
    Ok(streaming(shape, events))
}

/// The process `handle` while it runs; not_found otherwise, as envd
/// answers for a pid it no longer has.
async fn running_process(
    service: &SandboxService,
    tenant: &TenantId,
    sandbox: &SandboxId,
    handle: u64,
) -> Result<ProcessView, ConnectError> {
    service
        .list_processes(tenant, sandbox)
        .await?
        .into_iter()
        .find(|p| p.handle == handle && p.running)
        .ok_or_else(|| {
            ConnectError::new(
                Code::NotFound,
                format!("process with pid {handle} not found"),
            )
        })
}

/// What the event stream is doing next.
enum Step {
    Start,
    Follow,
    Done,
}

struct EventState {
    service: std::sync::Arc<SandboxService>,
    follow: ProcessFollow,
    _slot: StreamSlot,
    pty: bool,
    deadline: Option<tokio::time::Instant>,
    step: Step,
    /// Events of the last read not sent yet.
    pending: std::collections::VecDeque<process_event::Event>,
}

/// The stream of a process's events: its start (when `with_start`), its
/// output, keepalives while quiet, its end.
fn events_of(
    service: std::sync::Arc<SandboxService>,
    follow: ProcessFollow,
    slot: StreamSlot,
    pty: bool,
    timeout: Option<Duration>,
    with_start: bool,
) -> impl Stream<Item = Result<EventResponse, ConnectError>> + Send + 'static {
    let state = EventState {
        service,
        follow,
        _slot: slot,
        pty,
        deadline: timeout.map(|t| tokio::time::Instant::now() + t),
        step: if with_start {
            Step::Start
        } else {
            Step::Follow
        },
        pending: Default::default(),
    };
    futures_util::stream::unfold(state, |mut state| async move {
        if let Some(event) = state.pending.pop_front() {
            return Some((Ok(ProcessEvent::response(event)), state));
        }
        match state.step {
            Step::Done => None,
            Step::Start => {
                state.step = Step::Follow;
                let pid = pid_of(state.follow.handle);
                let event = process_event::Event::Start(StartEvent { pid });
                Some((Ok(ProcessEvent::response(event)), state))
            }
            Step::Follow => {
                let read = state.service.next_process_output(&mut state.follow);
                let out = match state.deadline {
                    Some(deadline) => match tokio::time::timeout_at(deadline, read).await {
                        Ok(out) => out,
                        Err(_) => {
                            state.step = Step::Done;
                            let err = ConnectError::new(
                                Code::DeadlineExceeded,
                                "the call's timeout passed (the process goes on)",
                            );
                            return Some((Err(err), state));
                        }
                    },
                    None => read.await,
                };
                match out {
                    Err(err) => {
                        state.step = Step::Done;
                        Some((Err(ConnectError::from(err)), state))
                    }
                    Ok(out) => {
                        state.pending.extend(output_events(&out, state.pty));
                        if let Some(exit) = out.exit.as_ref().filter(|_| out.data.is_empty()) {
                            state
                                .pending
                                .push_back(process_event::Event::End(end_event(exit)));
                            state.step = Step::Done;
                        } else if out.data.is_empty() {
                            state
                                .pending
                                .push_back(process_event::Event::Keepalive(Empty {}));
                        }
                        let event = state.pending.pop_front()?;
                        Some((Ok(ProcessEvent::response(event)), state))
                    }
                }
            }
        }
    })
}

/// The data events of one read: its stdout and stderr runs in order (a
/// terminal's screen as `pty`).
fn output_events(out: &ProcessOutput, pty: bool) -> Vec<process_event::Event> {
    let data = |output| {
        process_event::Event::Data(DataEvent {
            output: Some(output),
        })
    };
    if out.data.is_empty() {
        return Vec::new();
    }
    if pty {
        return vec![data(data_event::Output::Pty(out.data.clone()))];
    }
    let mut events = Vec::new();
    let mut at = out.offset;
    let end = out.offset + out.data.len() as u64;
    let bytes = |from: u64, to: u64| {
        let from = usize::try_from(from - out.offset).unwrap_or(0);
        let to = usize::try_from(to - out.offset).unwrap_or(0);
        out.data.get(from..to).unwrap_or_default().to_vec()
    };
    for range in &out.stderr {
        let (from, to) = (range.start.max(at), range.end.min(end));
        if from >= to {
            continue;
        }
        if from > at {
            events.push(data(data_event::Output::Stdout(bytes(at, from))));
        }
        events.push(data(data_event::Output::Stderr(bytes(from, to))));
        at = to;
    }
    if at < end {
        events.push(data(data_event::Output::Stdout(bytes(at, end))));
    }
    events
}

/// envd's end event: the exit code, or -1 and the signal's name as Go's
/// `ProcessState.String()` puts it.
fn end_event(exit: &ExitInfo) -> EndEvent {
    match (exit.code, exit.signal) {
        (Some(code), _) => EndEvent {
            exit_code: code,
            exited: true,
            status: format!("exit status {code}"),
            error: None,
        },
        (None, Some(signal)) => EndEvent {
            exit_code: -1,
            exited: false,
            status: format!("signal: {}", signal_name(signal)),
            error: None,
        },
        (None, None) => EndEvent {
            exit_code: -1,
            exited: false,
            status: "ended".into(),
            error: Some("the process ended without an exit status".into()),
        },
    }
}

fn signal_name(signal: i32) -> String {
    match signal {
        1 => "hangup".into(),
        2 => "interrupt".into(),
        9 => "killed".into(),
        13 => "broken pipe".into(),
        15 => "terminated".into(),
        other => format!("signal {other}"),
    }
}

/// `Process/List`: the running processes.
pub async fn list(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let _: ListRequest = single_request(shape, body).await?;
        let processes = state
            .service
            .list_processes(&caller.tenant, &caller.sandbox)
            .await?;
        let processes = processes
            .into_iter()
            .filter(|p| p.running)
            .map(|p| {
                let mut argv = p.command.into_iter();
                ProcessInfo {
                    config: Some(ProcessConfig {
                        cmd: argv.next().unwrap_or_default(),
                        args: argv.collect(),
                        ..ProcessConfig::default()
                    }),
                    pid: pid_of(p.handle),
                    tag: None,
                }
            })
            .collect();
        Ok((shape, ListResponse { processes }))
    }
    .await;
    unary_or_error(&headers, result)
}

fn unary_or_error<T: connect::Message>(
    headers: &HeaderMap,
    result: Result<(CallShape, T), ConnectError>,
) -> Response {
    match result {
        Ok((shape, message)) => unary(shape, Ok(message)),
        Err(err) => answer_error(headers, err),
    }
}

/// `Process/SendInput`: bytes to stdin (or the terminal).
pub async fn send_input(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let request: SendInputRequest = single_request(shape, body).await?;
        let handle = handle_of(request.process)?;
        let data = input_bytes(request.input.and_then(|i| i.input));
        write(&state, &caller, handle, data, false).await?;
        Ok((shape, Empty {}))
    }
    .await;
    unary_or_error(&headers, result)
}

fn input_bytes(input: Option<process_input::Input>) -> Vec<u8> {
    match input {
        Some(process_input::Input::Stdin(data) | process_input::Input::Pty(data)) => data,
        None => Vec::new(),
    }
}

async fn write(
    state: &AppState,
    caller: &EnvdCaller,
    handle: u64,
    data: Vec<u8>,
    eof: bool,
) -> Result<(), ConnectError> {
    let command = WriteStdin {
        data: None,
        data_base64: Some(Encoding::Base64.encode(&data)),
        eof,
    };
    running_process(&state.service, &caller.tenant, &caller.sandbox, handle).await?;
    state
        .service
        .write_process_stdin(&caller.tenant, &caller.sandbox, handle, command)
        .await?;
    Ok(())
}

/// `Process/StreamInput`: a client stream, its first message naming the
/// process, then input, then keepalives; answered once it ends.
pub async fn stream_input(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let mut envelopes = request_envelopes(body);
        let mut handle = None;
        let deadline = connect::deadline(&headers)
            .map(|t| tokio::time::Instant::now() + t)
            .unwrap_or_else(|| tokio::time::Instant::now() + STREAM_INPUT_LIMIT);
        loop {
            let next = tokio::time::timeout_at(deadline, envelopes.next())
                .await
                .map_err(|_| {
                    ConnectError::new(Code::DeadlineExceeded, "the input stream's timeout passed")
                })?;
            let Some(payload) = next else { break };
            let request: StreamInputRequest = connect::decode(shape.codec, &payload?)?;
            match (request.event, handle) {
                (Some(stream_input_request::Event::Start(start)), None) => {
                    let selected = handle_of(start.process)?;
                    running_process(&state.service, &caller.tenant, &caller.sandbox, selected)
                        .await?;
                    handle = Some(selected);
                }
                (Some(stream_input_request::Event::Data(data)), Some(handle)) => {
                    let bytes = input_bytes(data.input.and_then(|i| i.input));
                    write(&state, &caller, handle, bytes, false).await?;
                }
                (Some(stream_input_request::Event::Keepalive(_)), Some(_)) => {}
                (_, None) => {
                    return Err(ConnectError::new(
                        Code::InvalidArgument,
                        "the first message of an input stream is start, naming the process",
                    ));
                }
                (Some(stream_input_request::Event::Start(_)), Some(_)) | (None, Some(_)) => {
                    return Err(ConnectError::new(
                        Code::InvalidArgument,
                        "an input stream names its process once, in its first message",
                    ));
                }
            }
        }
        Ok(shape)
    }
    .await;
    match result {
        Ok(shape) => streaming(shape, futures_util::stream::iter([Ok(Empty {})])),
        Err(err) => answer_error(&headers, err),
    }
}

/// How long an input stream without a `Connect-Timeout-Ms` may stay open.
const STREAM_INPUT_LIMIT: Duration = Duration::from_secs(3600);

/// `Process/CloseStdin`.
pub async fn close_stdin(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let request: SelectRequest = single_request(shape, body).await?;
        let handle = handle_of(request.process)?;
        write(&state, &caller, handle, Vec::new(), true).await?;
        Ok((shape, Empty {}))
    }
    .await;
    unary_or_error(&headers, result)
}

/// `Process/SendSignal`: SIGTERM or SIGKILL to a running process.
pub async fn send_signal(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let request: SendSignalRequest = single_request(shape, body).await?;
        let handle = handle_of(request.process)?;
        let signal = match request.signal {
            9 | 15 => request.signal,
            other => {
                return Err(ConnectError::new(
                    Code::InvalidArgument,
                    format!("signal {other}: envd sends SIGTERM (15) or SIGKILL (9)"),
                ));
            }
        };
        running_process(&state.service, &caller.tenant, &caller.sandbox, handle).await?;
        let command = SendSignal {
            signal: SignalName::Number(signal),
        };
        state
            .service
            .signal_process(&caller.tenant, &caller.sandbox, handle, command)
            .await?;
        Ok((shape, Empty {}))
    }
    .await;
    unary_or_error(&headers, result)
}

/// `Process/Update`: a terminal's new size.
pub async fn update(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let result = async {
        let (caller, shape) = call(&state, &headers)?;
        let request: UpdateRequest = single_request(shape, body).await?;
        let handle = handle_of(request.process)?;
        if let Some(size) = request.pty.and_then(|p| p.size) {
            let command = ResizeTerminal {
                rows: u16::try_from(size.rows).unwrap_or(u16::MAX),
                cols: u16::try_from(size.cols).unwrap_or(u16::MAX),
            };
            state
                .service
                .resize_process(&caller.tenant, &caller.sandbox, handle, command)
                .await?;
        }
        Ok((shape, Empty {}))
    }
    .await;
    unary_or_error(&headers, result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(offset: u64, data: &[u8], stderr: Vec<std::ops::Range<u64>>) -> ProcessOutput {
        ProcessOutput {
            offset,
            next_offset: offset + data.len() as u64,
            dropped: 0,
            running: true,
            exit: None,
            data: data.to_vec(),
            stderr,
        }
    }

    fn shown(events: Vec<process_event::Event>) -> Vec<(String, String)> {
        events
            .into_iter()
            .map(|e| match e {
                process_event::Event::Data(DataEvent {
                    output: Some(output),
                }) => match output {
                    data_event::Output::Stdout(b) => ("out".into(), String::from_utf8(b).unwrap()),
                    data_event::Output::Stderr(b) => ("err".into(), String::from_utf8(b).unwrap()),
                    data_event::Output::Pty(b) => ("pty".into(), String::from_utf8(b).unwrap()),
                },
                other => panic!("{:?}", ProcessEvent::response(other)),
            })
            .collect()
    }

    #[test]
    fn a_read_splits_into_its_stdout_and_stderr_runs_in_order() {
        let out = read(10, b"abcdefg", vec![12..14, 16..17]);
        assert_eq!(
            shown(output_events(&out, false)),
            [("out", "ab"), ("err", "cd"), ("out", "ef"), ("err", "g")]
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        let only_err = read(0, b"xy", std::iter::once(0..2).collect());
        assert_eq!(
            shown(output_events(&only_err, false)),
            [("err".into(), "xy".into())]
        );
        assert_eq!(
            shown(output_events(&read(0, b"screen", vec![]), true)),
            [("pty".into(), "screen".into())]
        );
        assert!(output_events(&read(3, b"", vec![]), false).is_empty());
    }

    #[test]
    fn ends_read_as_envd_writes_them() {
        let exit = |code, signal| ExitInfo {
            code,
            signal,
            ..ExitInfo::default()
        };
        let end = end_event(&exit(Some(3), None));
        assert_eq!(
            (end.exit_code, end.exited, end.status.as_str()),
            (3, true, "exit status 3")
        );
        let killed = end_event(&exit(None, Some(9)));
        assert_eq!(
            (killed.exit_code, killed.exited, killed.status.as_str()),
            (-1, false, "signal: killed")
        );
    }

    #[test]
    fn a_selector_names_a_pid_and_nothing_else() {
        let by_pid = ProcessSelector {
            selector: Some(process_selector::Selector::Pid(7)),
        };
        assert_eq!(handle_of(Some(by_pid)), Ok(7));
        let by_tag = ProcessSelector {
            selector: Some(process_selector::Selector::Tag("t".into())),
        };
        assert_eq!(handle_of(Some(by_tag)).unwrap_err().code, Code::NotFound);
        assert_eq!(handle_of(None).unwrap_err().code, Code::InvalidArgument);
    }
}
