"""The request and answer types of Paddock's API: pydantic models generated
from its OpenAPI document (``sdk/openapi.json``, by ``generate.sh``), named
as the document names its schemas (``SandboxView``, ``ExecResult``,
``RunView``, ``EventEnvelope``, ...).

Answers keep the fields a newer server adds (``model_extra``); request
types refuse unknown fields, as the server does.
"""

from ._generated import models as _generated
from ._generated.models import *  # noqa: F403

__all__ = sorted(
    name
    for name, value in vars(_generated).items()
    if name.isidentifier() and isinstance(value, type) and value.__module__ == _generated.__name__
)
