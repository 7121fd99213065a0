"""The timed half of paddock-bench-e2b (tests/src/bin/bench_e2b.rs), run by
the venv's python against a live `paddock serve`: the real E2B SDK and
Paddock's own routes (httpx, one kept-alive client) from the same process,
interleaved round by round so a busy moment of the host weighs on both.

argv[1] is a JSON object (url, token, backends, pool_size, server_log,
creates, create_warmup, execs, exec_warmup, io_backend, file_bytes,
file_rounds); the SDK reads E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY
from the environment. Progress goes to stderr; stdout is one JSON object of
raw samples in seconds, which the binary turns into figures.
"""

import json
import os
import re
import struct
import sys
import time
from importlib.metadata import version

import httpx
from e2b import Sandbox

CFG = json.loads(sys.argv[1])
URL = CFG["url"]
OWN = httpx.Client(
    base_url=URL,
    headers={"Authorization": f"Bearer {CFG['token']}"},
    timeout=120,
)
# E2B's control plane, called raw with the tenant's key as the SDK sends it.
E2B = httpx.Client(base_url=URL, headers={"X-API-KEY": CFG["token"]}, timeout=120)
# envd's calls carry the sandbox's access token, not the tenant's: a client of their own.
ENVD = httpx.Client(base_url=URL, timeout=120)
# What the server logs when a warm pool holds one more started sandbox.
READY = re.compile(
    r'warm pool: a sandbox is ready.*?backend="?([a-z]+)"?.*?sandbox_id="?([A-Za-z0-9_-]+)'
)
# Every sandbox id a create handed this process (a pooled one is never handed out twice).
HANDED = set()
SDK_COMMAND = ["/bin/bash", "-l", "-c", "true"]  # what commands.run("true") starts


def say(*parts):
    print("paddock-bench-e2b:", *parts, file=sys.stderr, flush=True)


def ready_ids(backend):
    ids = set()
    with open(CFG["server_log"], encoding="utf-8", errors="replace") as log:
        for line in log:
            found = READY.search(line)
            if found and found.group(1) == backend:
                ids.add(found.group(2))
    return ids


def wait_pool_full(backend):
    """Until the backend's pool holds pool_size sandbox(es) nobody took."""
    deadline = time.monotonic() + 180
    while len(ready_ids(backend) - HANDED) < CFG["pool_size"]:
        if time.monotonic() > deadline:
            raise SystemExit(f"the {backend} warm pool did not refill within 180 s")
        time.sleep(0.02)
    # the refill's last act (its warm-up exec) is over; let the engine settle
    time.sleep(0.1)


def timed(f):
    start = time.perf_counter()
    value = f()
    return time.perf_counter() - start, value


# --- 1. create from a warm pool -----------------------------------------------


def sdk_create(backend):
    wait_pool_full(backend)
    elapsed, sandbox = timed(lambda: Sandbox.create(template=backend, timeout=300))
    sid = sandbox.sandbox_id
    hit = sid in ready_ids(backend)
    HANDED.add(sid)
    sandbox.kill()
    return elapsed, hit


def own_create(backend):
    wait_pool_full(backend)

    def create():
        answer = OWN.post("/v1/sandboxes", json={"backend": backend})
        answer.raise_for_status()
        return answer.json()["id"]

    elapsed, sid = timed(create)
    hit = sid in ready_ids(backend)
    HANDED.add(sid)
    OWN.delete(f"/v1/sandboxes/{sid}").raise_for_status()
    return elapsed, hit


def raw_create(backend):
    """E2B's create call made raw: the route's share without the SDK's."""
    wait_pool_full(backend)

    def create():
        answer = E2B.post("/v2/sandboxes", json={"templateID": backend, "timeout": 300})
        answer.raise_for_status()
        return answer.json()["sandboxID"]

    elapsed, sid = timed(create)
    hit = sid in ready_ids(backend)
    HANDED.add(sid)
    OWN.delete(f"/v1/sandboxes/{sid}").raise_for_status()
    return elapsed, hit


def creates(backend):
    paths = {"sdk": sdk_create, "own": own_create, "e2b_raw": raw_create}
    out = {name: [] for name in paths}
    out.update({f"{name}_pool_hits": 0 for name in paths})
    names = list(paths)
    for i in range(CFG["create_warmup"] + CFG["creates"]):
        # rotate the order, so no path always goes first after a refill
        for name in names[i % len(names) :] + names[: i % len(names)]:
            elapsed, hit = paths[name](backend)
            if i >= CFG["create_warmup"]:
                out[name].append(elapsed)
                out[f"{name}_pool_hits"] += int(hit)
    say(f"{backend}: {CFG['creates']} creates per path done")
    return out


# --- 2. exec round trip ------------------------------------------------------


def envelope(flags, payload):
    return struct.pack(">BI", flags, len(payload)) + payload


def envelopes(data):
    at = 0
    while at + 5 <= len(data):
        flags, length = struct.unpack(">BI", data[at : at + 5])
        yield flags, json.loads(data[at + 5 : at + 5 + length] or b"{}")
        at += 5 + length


def execs(sandbox):
    sid = sandbox.sandbox_id
    envd_headers = dict(sandbox.connection_config.sandbox_headers)
    envd_headers.update(
        {
            "Content-Type": "application/connect+json",
            "Connect-Protocol-Version": "1",
            "Connect-Timeout-Ms": "60000",
            "Keepalive-Ping-Interval": "50",
        }
    )
    start_body = envelope(
        0,
        json.dumps(
            {"process": {"cmd": SDK_COMMAND[0], "args": SDK_COMMAND[1:]}, "stdin": False}
        ).encode(),
    )

    def sdk():
        result = sandbox.commands.run("true")
        assert result.exit_code == 0, result

    def connect_raw():
        answer = ENVD.post("/process.Process/Start", content=start_body, headers=envd_headers)
        answer.raise_for_status()
        ended = None
        for flags, message in envelopes(answer.content):
            if flags & 0x02:
                assert "error" not in message, message
            elif "end" in message.get("event", {}):
                ended = message["event"]["end"]
        assert ended is not None and ended.get("exitCode", 0) == 0, answer.content

    def own(argv):
        def run():
            answer = OWN.post(f"/v1/sandboxes/{sid}/exec", json={"argv": argv})
            answer.raise_for_status()
            assert answer.json()["exit_code"] == 0, answer.text

        return run

    paths = {
        "sdk": sdk,
        "connect_raw": connect_raw,
        "own_bash": own(SDK_COMMAND),
        "own_bash_no_login": own(["/bin/bash", "-c", "true"]),
        "own_true": own(["true"]),
    }
    out = {name: [] for name in paths}
    names = list(paths)
    for i in range(CFG["exec_warmup"] + CFG["execs"]):
        # rotate the order, so no path always runs right after another
        for name in names[i % len(names) :] + names[: i % len(names)]:
            elapsed, _ = timed(paths[name])
            if i >= CFG["exec_warmup"]:
                out[name].append(elapsed)
    say(f"{CFG['execs']} execs per path done")
    return out


# --- 3. files ----------------------------------------------------------------


def files(sandbox):
    sid = sandbox.sandbox_id
    data = os.urandom(CFG["file_bytes"])
    envd_headers = dict(sandbox.connection_config.sandbox_headers)

    def sdk_write():
        sandbox.files.write("bench-sdk.bin", data)

    def sdk_read():
        return sandbox.files.read("bench-sdk.bin", format="bytes")

    def own_write():
        OWN.put(f"/v1/sandboxes/{sid}/files/bench-own.bin", content=data).raise_for_status()

    def own_read():
        answer = OWN.get(f"/v1/sandboxes/{sid}/files/bench-own.bin")
        answer.raise_for_status()
        return answer.content

    # envd's /files made raw (httpx): the SDK's body shape, without the SDK
    def raw_write():
        ENVD.post(
            "/files",
            params={"path": "bench-raw.bin"},
            files={"file": ("bench-raw.bin", data)},
            headers=envd_headers,
        ).raise_for_status()

    def raw_read():
        answer = ENVD.get("/files", params={"path": "bench-raw.bin"}, headers=envd_headers)
        answer.raise_for_status()
        return answer.content

    paths = {
        "sdk": (sdk_write, sdk_read),
        "own": (own_write, own_read),
        "envd_raw": (raw_write, raw_read),
    }
    out = {}
    for name in paths:
        out[f"{name}_write"] = []
        out[f"{name}_read"] = []
    names = list(paths)
    for i in range(1 + CFG["file_rounds"]):  # the first round untimed
        for name in names[i % len(names) :] + names[: i % len(names)]:
            write, read = paths[name]
            w, _ = timed(write)
            r, got = timed(read)
            if got != data:
                raise SystemExit(f"{name}: read back {len(got)} bytes, not what was written")
            if i >= 1:
                out[f"{name}_write"].append(w)
                out[f"{name}_read"].append(r)
    say(f"{CFG['file_rounds']} file rounds done")
    return out


def main():
    figures = {
        "versions": {
            "python": sys.version.split()[0],
            "e2b": version("e2b"),
            "httpx": version("httpx"),
        },
        "create": {},
    }
    for backend in CFG["backends"]:
        figures["create"][backend] = creates(backend)
    sandbox = Sandbox.create(template=CFG["io_backend"], timeout=1800)
    try:
        figures["exec"] = execs(sandbox)
        figures["files"] = files(sandbox)
    finally:
        sandbox.kill()
    json.dump(figures, sys.stdout)
    print()


main()
