"""The resources (one class per area of the API), written once over a
transport.

A resource method builds a :class:`Request` and hands it to its transport
with the function that reads the answer; the sync transport returns the
value, the async one an awaitable of it. The request bodies are the
generated models of the OpenAPI document, validated before they are sent
(a request type refuses unknown fields, as the server does).
"""

from __future__ import annotations

import base64
import builtins
from collections.abc import Mapping
from typing import Any

from . import models as m
from ._core import (
    FINISHED_RUN_STATES,
    DownloadTarget,
    ModelSpec,
    NetworkSpec,
    Request,
    StreamState,
    UploadSource,
    _params,
    _seg,
    body,
    decode_event,
    decode_process,
    exec_decoder,
    file_path,
    model_choice,
    network_policy,
    read_bytes,
    read_list,
    read_model,
    read_nothing,
)


class _Resource:
    def __init__(self, transport: Any) -> None:
        self._t = transport


class Files(_Resource):
    """A sandbox's files under ``/workspace`` (paths relative to it, or absolute inside it)."""

    def read(
        self,
        sandbox: str,
        path: str | bytes,
        *,
        offset: int | None = None,
        length: int | None = None,
    ) -> bytes:
        """The file's bytes (or ``length`` of them from ``offset``)."""
        return self._t.call(
            Request(
                "GET",
                f"/v1/sandboxes/{_seg(sandbox)}/files/{file_path(path)}",
                params=_params(offset=offset, len=length),
            ),
            read_bytes,
        )

    def read_text(self, sandbox: str, path: str | bytes, encoding: str = "utf-8") -> str:
        return self._t.then(self.read(sandbox, path), lambda b: b.decode(encoding))

    def write(
        self,
        sandbox: str,
        path: str | bytes,
        data: bytes | str,
        *,
        mode: int | str | None = None,
        parents: bool | None = None,
    ) -> m.Written:
        """Creates or atomically replaces the file; ``mode`` as octal (``0o644`` or ``"644"``)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if isinstance(mode, int):
            mode = format(mode, "o")
        return self._t.call_content(
            Request(
                "PUT",
                f"/v1/sandboxes/{_seg(sandbox)}/files/{file_path(path)}",
                params=_params(mode=mode, parents=parents),
                headers={"Content-Type": "application/octet-stream"},
            ),
            data,
            read_model(m.Written),
        )

    def list(self, sandbox: str, dir: str | None = None) -> m.Listing:
        return self._t.call(
            Request("GET", f"/v1/sandboxes/{_seg(sandbox)}/files", params=_params(dir=dir)),
            read_model(m.Listing),
        )

    def delete(self, sandbox: str, path: str | bytes, *, recursive: bool | None = None) -> None:
        return self._t.call(
            Request(
                "DELETE",
                f"/v1/sandboxes/{_seg(sandbox)}/files/{file_path(path)}",
                params=_params(recursive=recursive),
            ),
            read_nothing,
        )


class Processes(_Resource):
    """Background processes of a sandbox: started, fed, signalled, followed."""

    def start(
        self,
        sandbox: str,
        argv: builtins.list[str] | None = None,
        *,
        shell: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_ms: int | None = None,
        pty: Mapping[str, int] | m.PtySize | None = None,
    ) -> m.ProcessView:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/processes",
                json=body(
                    m.StartProcess,
                    argv=argv,
                    shell=shell,
                    cwd=cwd,
                    env=env,
                    timeout_ms=timeout_ms,
                    pty=pty,
                ),
            ),
            read_model(m.ProcessView),
        )

    def list(self, sandbox: str) -> builtins.list[m.ProcessView]:
        return self._t.call(
            Request("GET", f"/v1/sandboxes/{_seg(sandbox)}/processes"),
            read_list(m.ProcessList, "processes"),
        )

    def output(
        self,
        sandbox: str,
        handle: int,
        *,
        offset: int | None = None,
        max_bytes: int | None = None,
        encoding: str | None = None,
    ) -> m.ProcessOutputView:
        return self._t.call(
            Request(
                "GET",
                f"/v1/sandboxes/{_seg(sandbox)}/processes/{int(handle)}/output",
                params=_params(offset=offset, max_bytes=max_bytes, encoding=encoding),
            ),
            read_model(m.ProcessOutputView),
        )

    def stdin(
        self, sandbox: str, handle: int, data: bytes | str = b"", *, eof: bool = False
    ) -> None:
        """Writes to the process's stdin (``eof=True`` closes it after)."""
        if isinstance(data, str):
            fields: dict[str, Any] = {"data": data}
        else:
            fields = {"data_base64": base64.b64encode(data).decode("ascii")}
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/processes/{int(handle)}/stdin",
                json=body(m.WriteStdin, eof=eof, **fields),
            ),
            read_nothing,
        )

    def signal(self, sandbox: str, handle: int, signal: str | int = "TERM") -> None:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/processes/{int(handle)}/signal",
                json={"signal": signal},
            ),
            read_nothing,
        )

    def resize(self, sandbox: str, handle: int, rows: int, cols: int) -> None:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/processes/{int(handle)}/resize",
                json=body(m.ResizeTerminal, rows=rows, cols=cols),
            ),
            read_nothing,
        )

    def stream(
        self,
        sandbox: str,
        handle: int,
        *,
        offset: int = 0,
        resume: bool = True,
        retries: int = 5,
    ) -> Any:
        """The process's output from byte ``offset`` as it comes
        (:class:`ProcessOutput` items), then its exit (``ExitView``); a
        dropped connection resumes at the last offset received."""
        path = f"/v1/sandboxes/{_seg(sandbox)}/processes/{int(handle)}/stream"
        state = StreamState(
            lambda _position: Request("GET", path, params=_params(offset=offset)),
            decode_process,
            offset,
            resume=resume,
            retries=retries,
            last_kinds=frozenset({"exit"}),
        )
        return self._t.stream(state)


class Sandboxes(_Resource):
    """Sandboxes: lifecycle, exec, search; their ``files`` and ``processes``."""

    def __init__(self, transport: Any) -> None:
        super().__init__(transport)
        self.files = Files(transport)
        self.processes = Processes(transport)

    def create(
        self,
        *,
        workspace: str | None = None,
        network: NetworkSpec | None = None,
        limits: Mapping[str, Any] | m.LimitsRequest | None = None,
        read_only: bool | None = None,
        backend: str | None = None,
        image: str | None = None,
        env: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> m.SandboxView:
        """A new sandbox (``CreateSandbox``'s fields; every one optional)."""
        return self._t.call(
            Request(
                "POST",
                "/v1/sandboxes",
                json=body(
                    m.CreateSandbox,
                    workspace=workspace,
                    network=network_policy(network),
                    limits=limits,
                    read_only=read_only,
                    backend=backend,
                    image=image,
                    env=env,
                    **fields,
                ),
            ),
            read_model(m.SandboxView),
        )

    def get(self, sandbox: str) -> m.SandboxView:
        return self._t.call(
            Request("GET", f"/v1/sandboxes/{_seg(sandbox)}"), read_model(m.SandboxView)
        )

    def list(
        self, *, state: str | None = None, after: str | None = None, limit: int | None = None
    ) -> m.SandboxList:
        """One page (``next_after`` names the next one's ``after``)."""
        return self._t.call(
            Request("GET", "/v1/sandboxes", params=_params(state=state, after=after, limit=limit)),
            read_model(m.SandboxList),
        )

    def stop(self, sandbox: str) -> m.SandboxView:
        """Destroys the sandbox (``DELETE``): the record, now ``stopped``."""
        return self._t.call(
            Request("DELETE", f"/v1/sandboxes/{_seg(sandbox)}"), read_model(m.SandboxView)
        )

    delete = stop

    def pause(self, sandbox: str, mode: str | None = None) -> m.SandboxView:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/pause",
                json=body(m.PauseSandbox, mode=mode),
            ),
            read_model(m.SandboxView),
        )

    def resume(self, sandbox: str) -> m.SandboxView:
        return self._t.call(
            Request("POST", f"/v1/sandboxes/{_seg(sandbox)}/resume"),
            read_model(m.SandboxView),
        )

    @staticmethod
    def _exec_body(
        argv: builtins.list[str] | None,
        shell: str | None,
        stdin: bytes | str | None,
        fields: dict[str, Any],
    ) -> dict[str, Any]:
        if isinstance(stdin, bytes):
            fields["stdin_base64"] = base64.b64encode(stdin).decode("ascii")
        elif stdin is not None:
            fields["stdin"] = stdin
        return body(m.ExecCommand, argv=argv, shell=shell, **fields)

    def exec(
        self,
        sandbox: str,
        argv: builtins.list[str] | None = None,
        *,
        shell: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | str | None = None,
        timeout_ms: int | None = None,
        output_cap: int | None = None,
        output_encoding: str | None = None,
    ) -> m.ExecResult:
        """Runs ``argv`` (or a ``shell`` script) and waits: exit and output."""
        fields = dict(
            cwd=cwd,
            env=env,
            timeout_ms=timeout_ms,
            output_cap=output_cap,
            output_encoding=output_encoding,
        )
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/exec",
                json=self._exec_body(argv, shell, stdin, fields),
            ),
            read_model(m.ExecResult),
        )

    def exec_stream(
        self,
        sandbox: str,
        argv: builtins.list[str] | None = None,
        *,
        shell: str | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | str | None = None,
        timeout_ms: int | None = None,
        output_encoding: str | None = None,
    ) -> Any:
        """Runs a command, yielding ``ExecStarted``, :class:`ExecOutput` items
        and its ``ExitView`` as they happen. Not resumed: a client that goes
        away kills the command (docs/api.md)."""
        fields = dict(cwd=cwd, env=env, timeout_ms=timeout_ms, output_encoding=output_encoding)
        payload = self._exec_body(argv, shell, stdin, fields)
        path = f"/v1/sandboxes/{_seg(sandbox)}/exec"
        state = StreamState(
            lambda _position: Request(
                "POST", path, json=payload, headers={"Accept": "text/event-stream"}
            ),
            exec_decoder(output_encoding),
            None,
            resume=False,
            retries=0,
            last_kinds=frozenset({"exit"}),
        )
        return self._t.stream(state)

    def search(
        self,
        sandbox: str,
        *,
        path: str | None = None,
        name_glob: str | None = None,
        content: str | None = None,
        max_results: int | None = None,
        max_file_bytes: int | None = None,
    ) -> m.SearchView:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/search",
                json=body(
                    m.SearchCommand,
                    path=path,
                    name_glob=name_glob,
                    content=content,
                    max_results=max_results,
                    max_file_bytes=max_file_bytes,
                ),
            ),
            read_model(m.SearchView),
        )


class Snapshots(_Resource):
    """Snapshots of a sandbox's workspace: taken, restored, forked, moved as archives."""

    def create(
        self,
        sandbox: str,
        *,
        excludes: builtins.list[str] | None = None,
        max_files: int | None = None,
        max_bytes: int | None = None,
        session: str | None = None,
    ) -> m.SnapshotView:
        """A snapshot of the sandbox's ``/workspace``."""
        return self._t.call(
            Request(
                "POST",
                f"/v1/sandboxes/{_seg(sandbox)}/snapshots",
                json=body(
                    m.CreateSnapshot,
                    excludes=excludes,
                    max_files=max_files,
                    max_bytes=max_bytes,
                    session=session,
                ),
            ),
            read_model(m.SnapshotView),
        )

    def get(self, snapshot: str) -> m.SnapshotView:
        return self._t.call(
            Request("GET", f"/v1/snapshots/{_seg(snapshot)}"), read_model(m.SnapshotView)
        )

    def list(self, *, after: str | None = None, limit: int | None = None) -> m.SnapshotList:
        return self._t.call(
            Request("GET", "/v1/snapshots", params=_params(after=after, limit=limit)),
            read_model(m.SnapshotList),
        )

    def delete(self, snapshot: str) -> m.SnapshotView:
        return self._t.call(
            Request("DELETE", f"/v1/snapshots/{_seg(snapshot)}"), read_model(m.SnapshotView)
        )

    def restore(
        self,
        snapshot: str,
        *,
        count: int | None = None,
        network: NetworkSpec | None = None,
        limits: Mapping[str, Any] | m.LimitsRequest | None = None,
        read_only: bool | None = None,
        backend: str | None = None,
        image: str | None = None,
    ) -> builtins.list[m.SandboxView]:
        """New sandboxes (``count``, default 1) each on a new workspace holding
        the snapshot's files; all or nothing."""
        return self._t.call(
            Request(
                "POST",
                f"/v1/snapshots/{_seg(snapshot)}/restore",
                json=body(
                    m.RestoreSnapshot,
                    count=count,
                    network=network_policy(network),
                    limits=limits,
                    read_only=read_only,
                    backend=backend,
                    image=image,
                ),
            ),
            read_list(m.Restored, "sandboxes"),
        )

    def fork(self, snapshot: str, count: int, **options: Any) -> builtins.list[m.SandboxView]:
        """``count`` sandboxes from one snapshot at once (a restore of more than one)."""
        return self.restore(snapshot, count=count, **options)

    def download(self, snapshot: str, dest: DownloadTarget) -> int:
        """Writes the snapshot's archive (tar, zstd) to ``dest``, streamed; its size."""
        return self._t.download(Request("GET", f"/v1/snapshots/{_seg(snapshot)}/archive"), dest)

    def upload(
        self,
        source: UploadSource,
        *,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> m.SnapshotView:
        """A snapshot from an archive (tar, zstd), streamed from ``source``
        and checked as a restore checks it."""
        return self._t.call_content(
            Request(
                "POST",
                "/v1/snapshots",
                params=_params(max_files=max_files, max_bytes=max_bytes),
                headers={"Content-Type": "application/zstd"},
            ),
            source,
            read_model(m.SnapshotView),
        )


class Workspaces(_Resource):
    """Workspaces: directories that outlive sandboxes; uploaded and downloaded as archives."""

    def create(self, name: str | None = None, *, quota_bytes: int | None = None) -> m.WorkspaceView:
        return self._t.call(
            Request(
                "POST",
                "/v1/workspaces",
                json=body(m.CreateWorkspace, name=name, quota_bytes=quota_bytes),
            ),
            read_model(m.WorkspaceView),
        )

    def get(self, workspace: str) -> m.WorkspaceView:
        return self._t.call(
            Request("GET", f"/v1/workspaces/{_seg(workspace)}"), read_model(m.WorkspaceView)
        )

    def list(self, *, after: str | None = None, limit: int | None = None) -> m.WorkspaceList:
        return self._t.call(
            Request("GET", "/v1/workspaces", params=_params(after=after, limit=limit)),
            read_model(m.WorkspaceList),
        )

    def delete(self, workspace: str) -> m.WorkspaceView:
        return self._t.call(
            Request("DELETE", f"/v1/workspaces/{_seg(workspace)}"), read_model(m.WorkspaceView)
        )

    def upload(
        self,
        source: UploadSource,
        *,
        name: str | None = None,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> m.WorkspaceView:
        """A new workspace holding an archive's (tar, zstd) files."""
        return self._t.call_content(
            Request(
                "POST",
                "/v1/workspaces/import",
                params=_params(name=name, max_files=max_files, max_bytes=max_bytes),
                headers={"Content-Type": "application/zstd"},
            ),
            source,
            read_model(m.WorkspaceView),
        )

    def download(
        self,
        workspace: str,
        dest: DownloadTarget,
        *,
        max_files: int | None = None,
        max_bytes: int | None = None,
    ) -> int:
        """Writes the workspace's files packed (tar, zstd) to ``dest``; its size."""
        return self._t.download(
            Request(
                "GET",
                f"/v1/workspaces/{_seg(workspace)}/archive",
                params=_params(max_files=max_files, max_bytes=max_bytes),
            ),
            dest,
        )


def _event_stream(
    transport: Any,
    path: str,
    after: int | None,
    until: str | None,
    resume: bool,
    retries: int,
) -> Any:
    state = StreamState(
        lambda _position: Request("GET", path, params=_params(after=after, until=until)),
        decode_event,
        after,
        resume=resume,
        retries=retries,
    )
    return transport.stream(state)


class Runs(_Resource):
    """Agent runs: started in a session, steered, cancelled, resumed, followed."""

    def start(
        self,
        session: str,
        goal: str,
        model: ModelSpec,
        *,
        success_criteria: builtins.list[str] | None = None,
        mode: str | None = None,
        driver: str | None = None,
        budgets: Mapping[str, Any] | m.Budgets | None = None,
        instructions: str | None = None,
        network: NetworkSpec | None = None,
        backend: str | None = None,
        image: str | None = None,
        **fields: Any,
    ) -> m.RunView:
        """Starts a run toward ``goal`` in the session (202: ``preparing`` or
        ``queued``); ``model`` a spec such as ``"openai:gpt-4o"``, a
        ``ModelChoice``, or :func:`scripted` turns; ``driver`` what drives the
        agent (``builtin``, or ``claude-code``, ``codex``, ``opencode`` where
        the server enables them)."""
        return self._t.call(
            Request(
                "POST",
                f"/v1/sessions/{_seg(session)}/runs",
                json=body(
                    m.StartRunCommand,
                    goal=goal,
                    model=model_choice(model),
                    success_criteria=success_criteria,
                    mode=mode,
                    driver=driver,
                    budgets=budgets,
                    instructions=instructions,
                    network=network_policy(network),
                    backend=backend,
                    image=image,
                    **fields,
                ),
            ),
            read_model(m.RunView),
        )

    def list(self, session: str) -> builtins.list[m.RunView]:
        """The session's runs, oldest first."""
        return self._t.call(
            Request("GET", f"/v1/sessions/{_seg(session)}/runs"), read_list(m.RunList, "runs")
        )

    def get(self, run: str) -> m.RunView:
        return self._t.call(Request("GET", f"/v1/runs/{_seg(run)}"), read_model(m.RunView))

    def cancel(self, run: str) -> m.RunView:
        """Cancels the run; answers it once it stopped (``cancelled``)."""
        return self._t.call(Request("POST", f"/v1/runs/{_seg(run)}/cancel"), read_model(m.RunView))

    def steer(self, run: str, text: str) -> m.SteeringView:
        """A message for the run's next model turn (202)."""
        return self._t.call(
            Request("POST", f"/v1/runs/{_seg(run)}/messages", json=body(m.SteerRun, text=text)),
            read_model(m.SteeringView),
        )

    def resume(
        self,
        run: str,
        model: ModelSpec,
        *,
        budgets: Mapping[str, Any] | m.Budgets | None = None,
        instructions: str | None = None,
        force: bool | None = None,
        **fields: Any,
    ) -> m.ResumedView:
        """Continues an ``interrupted`` run as a new run (202) in its session."""
        return self._t.call(
            Request(
                "POST",
                f"/v1/runs/{_seg(run)}/resume",
                json=body(
                    m.ResumeRunCommand,
                    model=model_choice(model),
                    budgets=budgets,
                    instructions=instructions,
                    force=force,
                    **fields,
                ),
            ),
            read_model(m.ResumedView),
        )

    def wait(self, run: str, *, timeout: float | None = None, interval: float = 0.25) -> m.RunView:
        """The run once it ended (``completed``, ``cancelled``, ``failed`` or
        ``interrupted``), asked every ``interval`` seconds; raises
        ``TimeoutError`` after ``timeout`` seconds."""
        return self._t.poll(
            lambda: self.get(run),
            lambda view: view.state.value in FINISHED_RUN_STATES,
            timeout,
            interval,
            f"run {run} did not end",
        )

    def children(self, run: str) -> builtins.list[m.RunView]:
        return self._t.call(
            Request("GET", f"/v1/runs/{_seg(run)}/children"), read_list(m.ChildRuns, "runs")
        )

    def events(
        self, run: str, *, after: int | None = None, resume: bool = True, retries: int = 5
    ) -> Any:
        """The run's events after sequence number ``after``, ending after its
        ``run.finished``; resumed after a dropped connection."""
        return _event_stream(self._t, f"/v1/runs/{_seg(run)}/events", after, None, resume, retries)


class Sessions(_Resource):
    """Agent sessions: their runs (``runs``), events, forks, checkpoints."""

    def __init__(self, transport: Any, runs: Runs) -> None:
        super().__init__(transport)
        self.runs = runs

    def create(self, workspace: str, title: str | None = None) -> m.SessionView:
        return self._t.call(
            Request(
                "POST", "/v1/sessions", json=body(m.CreateSession, workspace=workspace, title=title)
            ),
            read_model(m.SessionView),
        )

    def get(self, session: str) -> m.SessionView:
        return self._t.call(
            Request("GET", f"/v1/sessions/{_seg(session)}"), read_model(m.SessionView)
        )

    def list(
        self,
        *,
        workspace: str | None = None,
        after: str | None = None,
        limit: int | None = None,
    ) -> m.SessionList:
        return self._t.call(
            Request(
                "GET",
                "/v1/sessions",
                params=_params(workspace=workspace, after=after, limit=limit),
            ),
            read_model(m.SessionList),
        )

    def update(
        self, session: str, *, title: str | None = None, archived: bool | None = None
    ) -> m.SessionView:
        return self._t.call(
            Request(
                "PATCH",
                f"/v1/sessions/{_seg(session)}",
                json=body(m.UpdateSession, title=title, archived=archived),
            ),
            read_model(m.SessionView),
        )

    def archive(self, session: str) -> m.SessionView:
        """Archives the session (``DELETE`` without ``purge``): it takes no new run."""
        return self._t.call(
            Request("DELETE", f"/v1/sessions/{_seg(session)}"),
            read_model(m.SessionView),
        )

    def purge(self, session: str, *, force: bool | None = None) -> m.SessionDeletedView:
        """Deletes the session for good, with its subagents' sessions."""
        return self._t.call(
            Request(
                "DELETE",
                f"/v1/sessions/{_seg(session)}",
                params=_params(purge=True, force=force),
            ),
            read_model(m.SessionDeletedView),
        )

    def fork(
        self,
        session: str,
        *,
        at_run: str | None = None,
        at_checkpoint: str | None = None,
        title: str | None = None,
    ) -> m.SessionView:
        """A new session sharing the history, on a new workspace as the
        session (or the run ``at_run``, or ``at_checkpoint``) left it."""
        return self._t.call(
            Request(
                "POST",
                f"/v1/sessions/{_seg(session)}/fork",
                json=body(m.ForkSession, at_run=at_run, at_checkpoint=at_checkpoint, title=title),
            ),
            read_model(m.SessionView),
        )

    def checkpoints(self, session: str) -> builtins.list[m.CheckpointView]:
        return self._t.call(
            Request("GET", f"/v1/sessions/{_seg(session)}/checkpoints"),
            read_list(m.CheckpointList, "checkpoints"),
        )

    def diff(
        self, session: str, *, from_: str | None = None, to: str | None = None
    ) -> m.CheckpointDiffView:
        params = _params(to=to) or {}
        if from_ is not None:
            params["from"] = from_
        return self._t.call(
            Request("GET", f"/v1/sessions/{_seg(session)}/diff", params=params or None),
            read_model(m.CheckpointDiffView),
        )

    def rewind(self, session: str, checkpoint: str, *, force: bool | None = None) -> m.RewindView:
        return self._t.call(
            Request(
                "POST",
                f"/v1/sessions/{_seg(session)}/rewind",
                json=body(m.RewindSession, checkpoint=checkpoint, force=force),
            ),
            read_model(m.RewindView),
        )

    def events(
        self,
        session: str,
        *,
        after: int | None = None,
        until: str | None = None,
        resume: bool = True,
        retries: int = 5,
    ) -> Any:
        """The session's events with a sequence number above ``after``, then
        live ones; ``until="run_finished"`` ends after the next
        ``run.finished``, ``"caught_up"`` after the stored ones. A dropped
        connection is reopened with ``Last-Event-ID``: every event comes
        once, in order."""
        return _event_stream(
            self._t, f"/v1/sessions/{_seg(session)}/events", after, until, resume, retries
        )


class Resources:
    """The areas of the API over one transport."""

    def __init__(self, transport: Any) -> None:
        self.sandboxes = Sandboxes(transport)
        self.snapshots = Snapshots(transport)
        self.workspaces = Workspaces(transport)
        self.runs = Runs(transport)
        self.sessions = Sessions(transport, self.runs)
