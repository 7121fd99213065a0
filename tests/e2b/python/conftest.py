"""Fixtures of the E2B SDK suite (test_sdk.py).

The suite drives the real `e2b` Python SDK, through its public API only,
against a server that speaks E2B's REST API and envd: `paddock serve` when
tests/tests/scenarios/e2b_sdk.rs runs it, any E2B deployment otherwise. It
reads the SDK's own variables and two of its own:

- E2B_API_URL, E2B_SANDBOX_URL: the server (REST API and envd), both required
  so that nothing reaches E2B's cloud by default;
- E2B_API_KEY: a key of one tenant (team);
- E2B_TEST_OTHER_API_KEY: a key of a second tenant, for the isolation cases;
- E2B_TEST_DIR: the sandbox's home directory, where relative paths resolve and
  commands start (default /home/user, E2B's);
- E2B_TEST_ENVD_DOMAIN: the domain under which the server routes envd by host
  name (`49983-<id>.<domain>`, what E2B_DOMAIN makes the SDK call over TLS),
  reached here by sending that Host to E2B_SANDBOX_URL.

Every sandbox a test makes is killed when the test ends, passed or failed.
"""

import os
import uuid

import pytest
from e2b import Sandbox

REQUIRED = (
    "E2B_API_URL",
    "E2B_SANDBOX_URL",
    "E2B_API_KEY",
    "E2B_TEST_OTHER_API_KEY",
    "E2B_TEST_ENVD_DOMAIN",
)

# Sandbox lifetime the tests ask for: long enough for any one test, short
# enough that a sandbox a crashed run leaks goes by itself.
LIFETIME_SECS = 120


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "smoke: the subset run on slow tiers (a microVM under TCG)"
    )
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if missing:
        raise pytest.UsageError(
            "the E2B SDK suite needs " + ", ".join(missing) + " (see conftest.py)"
        )
    if os.environ.get("E2B_DEBUG", "").lower() == "true":
        raise pytest.UsageError("E2B_DEBUG=true skips the API: unset it")


@pytest.fixture(scope="session")
def other_api_key() -> str:
    return os.environ["E2B_TEST_OTHER_API_KEY"]


@pytest.fixture(scope="session")
def home() -> str:
    return os.environ.get("E2B_TEST_DIR") or "/home/user"


@pytest.fixture
def tag() -> str:
    """A value no other test (or run) puts in its sandboxes' metadata."""
    return uuid.uuid4().hex


@pytest.fixture
def make_sandbox():
    """Creates sandboxes (timeout LIFETIME_SECS unless given) and kills every
    one of them when the test ends."""
    made = []

    def make(**options) -> Sandbox:
        options.setdefault("timeout", LIFETIME_SECS)
        sandbox = Sandbox.create(**options)
        made.append(sandbox)
        return sandbox

    try:
        yield make
    finally:
        for sandbox in made:
            try:
                sandbox.kill()
            except Exception:
                pass


@pytest.fixture
def sandbox(make_sandbox) -> Sandbox:
    return make_sandbox()
