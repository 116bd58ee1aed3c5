"""Cursors: a position in a listing's order, opaque to clients (base64 of JSON)."""

from __future__ import annotations

import base64
from typing import Any

import orjson

__all__ = ["NOT_OURS", "decode", "encode"]

NOT_OURS = "the cursor is not one this API returned"


def encode(position: list[Any]) -> str:
    """A cursor: a position in a listing's order, opaque to clients."""
    return base64.urlsafe_b64encode(orjson.dumps(position)).decode()


def decode(cursor: str) -> Any:
    """What :func:`encode` was given; ValueError when ``cursor`` is not base64 of JSON."""
    try:
        return orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError(NOT_OURS) from None
