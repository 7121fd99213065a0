"""The asyncio client: the same resources, awaited; streams with `async for`,
resumed after a cut as the sync ones are."""

from __future__ import annotations

import asyncio

import pytest

import paddock
from paddock import AsyncPaddock, ExecOutput, ProcessOutput, scripted
from paddock.models import ExitView


def test_the_async_client_drives_a_sandbox(url: str, token: str) -> None:
    async def main() -> None:
        async with AsyncPaddock(url, token) as client:
            sandbox = await client.sandboxes.create()
            try:
                # several requests at once on one client
                results = await asyncio.gather(
                    *(client.sandboxes.exec(sandbox.id, ["echo", str(i)]) for i in range(4))
                )
                assert [r.stdout for r in results] == [f"{i}\n" for i in range(4)]

                await client.sandboxes.files.write(sandbox.id, "a.txt", b"async")
                assert await client.sandboxes.files.read_text(sandbox.id, "a.txt") == "async"

                items = [
                    i
                    async for i in client.sandboxes.exec_stream(
                        sandbox.id, ["sh", "-c", "printf x; exit 2"], output_encoding="base64"
                    )
                ]
                assert [i.data for i in items if isinstance(i, ExecOutput)] == [b"x"]
                assert isinstance(items[-1], ExitView) and items[-1].exit_code == 2

                process = await client.sandboxes.processes.start(sandbox.id, shell="echo p")
                out = b""
                async for item in client.sandboxes.processes.stream(sandbox.id, process.handle):
                    if isinstance(item, ProcessOutput):
                        out += item.data
                assert out == b"p\n"

                with pytest.raises(paddock.NotFound) as missing:
                    await client.sandboxes.files.read(sandbox.id, "missing")
                assert missing.value.code == "file_not_found"
            finally:
                stopped = await client.sandboxes.stop(sandbox.id)
                assert stopped.state == "stopped"

    asyncio.run(main())


def test_the_async_event_stream_resumes_after_a_cut(url: str, token: str, cutting_proxy) -> None:
    proxy, proxy_url = cutting_proxy(b"event: tool.call")

    async def main() -> list:
        async with AsyncPaddock(url, token) as client, AsyncPaddock(proxy_url, token) as through:
            workspace = await client.workspaces.create("sdk-async")
            session = await client.sessions.create(workspace.id)
            model = scripted(
                [
                    {
                        "text": "",
                        "tool_calls": [
                            {"name": "run_command", "arguments": {"command": "sleep 1"}}
                        ],
                    },
                    {
                        "text": "",
                        "tool_calls": [
                            {
                                "name": "complete_task",
                                "arguments": {
                                    "verdict": "met",
                                    "summary": "slept",
                                    "evidence": ["sleep ran"],
                                },
                            }
                        ],
                    },
                ]
            )
            run = await client.sessions.runs.start(session.id, "sleep", model)
            stream = through.runs.events(run.id)
            events = [e async for e in stream]
            assert stream.connections == 2
            assert (await client.runs.wait(run.id, timeout=60)).state == "completed"
            return events

    events = asyncio.run(main())
    assert proxy.cuts == 1
    ids = [e.id for e in events if e.id is not None]
    assert ids == list(range(1, len(ids) + 1))
    assert events[-1].kind == "run.finished"
