"""The base of every generated model (``generate.sh`` names it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PaddockModel(BaseModel):
    """A schema of Paddock's OpenAPI document.

    Fields a newer server sends that this SDK does not know are kept (in
    ``model_extra``) rather than dropped; request types that the server
    refuses unknown fields of set ``extra="forbid"`` themselves, so a typo
    fails here before any request.
    """

    model_config = ConfigDict(extra="allow")
