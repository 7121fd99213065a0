"""The package as installed (scripts/sdk-python-setup.sh installs the wheel),
and its generated models against the document the server serves."""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import distribution
from pathlib import Path

import paddock
from paddock import Paddock

DOCUMENT = Path(__file__).resolve().parents[2] / "openapi.json"


def test_the_wheel_carries_the_generated_models_and_the_typing_marker() -> None:
    dist = distribution("paddock-sdk")
    assert dist.version == paddock.__version__
    files = {str(f) for f in dist.files or []}
    for path in (
        "paddock/__init__.py",
        "paddock/_generated/models.py",
        "paddock/models.py",
        "paddock/py.typed",
    ):
        assert path in files, path
    requires = " ".join(dist.requires or [])
    assert "httpx" in requires and "pydantic" in requires


def test_the_models_were_generated_from_the_document_the_server_serves(client: Paddock) -> None:
    served = client.openapi()
    committed = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    assert served == committed, (
        "sdk/openapi.json is not the server's document: run "
        "sdk/python/generate.sh --refresh and commit what changed"
    )
    # every object and enum schema has its model, named as the document
    # names it (ids and other scalars are inlined as constrained strings)
    schemas = served["components"]["schemas"]
    named = [n for n, s in schemas.items() if "properties" in s or "enum" in s]
    assert len(named) > 100
    for name in named:
        assert name in paddock.models.__all__, name
    header = Path(paddock.models._generated.__file__).read_text(encoding="utf-8")
    assert hashlib.sha256(DOCUMENT.read_bytes()).hexdigest() in header.splitlines()[1]


def test_health_answers_for_the_tenant(client: Paddock) -> None:
    health = client.health()
    assert health.status == "ok"
    assert health.database.writable is True
