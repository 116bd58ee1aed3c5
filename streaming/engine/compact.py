"""The compact form the commonest event is held and applied in: a send that was delivered.

Nine events in ten of a busy cluster are sends that succeeded, and all the engine does with one
is count it, let time pass to its ``ts`` and resolve its topic's ``NO_ROUTE_INFO`` if one is open.
Held as its raw JSON, each was packed, compressed, stored, read back and decoded again in the
stateful task (``benchmarks.engine_step``: more than half of the step). The read stage, which
decodes every line once to validate it, writes such a send's compact form beside it: the four
fields the engine reads, after a separator no JSON text starts with. The intake holds that
instead of the raw line (the raw line is still what a late or duplicate send is reported with),
and :func:`expand` gives the engine its event without decoding JSON.

A send whose topic was auto-created by it (``auto_created``), and every failed send, keep their
raw form: the rules read more of them.
"""

from __future__ import annotations

from typing import Any

from routewatch.events import DeliveredStatus
from streaming.engine.intake import NO_SEQ

__all__ = ["MARK", "compact", "expand"]

MARK = "\x1f"  # (no JSON text starts with a control character)


def compact(event: dict[str, Any]) -> str | None:
    """A decoded, valid event -> its compact held form, if it has one (a delivered send that
    auto-created nothing)."""
    if event["type"] != "send" or event["status"] not in DeliveredStatus:
        return None
    if event.get("auto_created") or MARK in event["cluster"]:
        return None
    return f"{MARK}{event['cluster']}{MARK}{event['status']}{MARK}{event['topic']}"


def expand(value: str, ts: int, seq: int) -> dict[str, Any]:
    """A compact held form, with its event's ``ts`` and ``seq`` (as held: -1 for none) -> the
    event as the engine applies it."""
    _, cluster, status, topic = value.split(MARK, 3)
    return {
        "type": "send",
        "ts": ts,
        "seq": None if seq == NO_SEQ else seq,
        "cluster": cluster,
        "status": status,
        "topic": topic,
    }
