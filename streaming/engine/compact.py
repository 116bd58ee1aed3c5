"""The compact form the commonest event is held and applied in: a send that was delivered.

Nine events in ten of a busy cluster are sends that succeeded, and all the engine does with one
is count it, let time pass to its ``ts`` and resolve its topic's ``NO_ROUTE_INFO`` if one is open.
Held as its raw JSON, each was packed, compressed, stored, read back and decoded again in the
stateful task (``benchmarks.engine_step``: more than half of the step). The read stage, which
decodes every line once to validate it, writes such a send's compact form beside it: the four
fields the engine reads, after a separator no JSON text starts with. The intake holds that
instead of the raw line (the raw line is still what a late or duplicate send is reported with),
and :func:`delivered` gives the engine its fields without decoding JSON
(:meth:`streaming.engine.cluster.ClusterEngine.delivered`; :func:`expand`: the event they stand
for).

A send whose topic was auto-created by it (``auto_created``), and every failed send, keep their
raw form: the rules read more of them.

A full registration is most of the bytes (a broker's whole topic table, every 30 s per
NameServer) and, once its table is known, changes nothing but liveness: a registration of the
data version its registration already holds is not read for its table. It is held with its
**head** — every field but ``topics``, as JSON — before its raw line (:func:`head_form`); the
engine decodes the head, and the raw line only if the registration's data version is one it
has not applied (:meth:`streaming.engine.cluster.ClusterEngine.knows_table`).

A route pull is held **slim** — every field but ``queues``, as JSON — unless it is a successful
pull of the template for a topic (``via_default``): the engine reads a pull's queues only then
(the brokers a producer's auto-created route names). A route lists every broker of its topic, so
in a cluster of 100 brokers a pull is about 8 kB, most of it queues.

The read stage ships each event's form beside its raw line (the ``value`` column), so a head is
shipped without the raw line behind it (:func:`shipped`) and joined to it in the stateful task
(:func:`held_form`): the registration's bytes travel once.
"""

from __future__ import annotations

from typing import Any

import orjson

from routewatch.events import DeliveredStatus
from streaming.engine.intake import NO_SEQ

__all__ = [
    "HEAD",
    "MARK",
    "SLIM",
    "compact",
    "delivered",
    "expand",
    "head_of",
    "held_form",
    "raw_of",
    "shipped",
    "slim",
]

MARK = "\x1f"  # (no JSON text starts with a control character)
HEAD = "\x1e"  # a full registration's head, a newline, its raw line
SLIM = "\x1d"  # a route pull without its queues, as JSON


def compact(event: dict[str, Any], raw: str | bytes) -> str | None:
    """A decoded, valid event and its raw line -> its compact held form, if it has one: a
    delivered send that auto-created nothing, a full registration with a data version (its
    head before its raw line), or a route pull whose queues the engine does not read."""
    form = shipped(event, raw)
    return None if form is None else held_form(form, raw)


def shipped(event: dict[str, Any], raw: str | bytes) -> str | None:
    """What the read stage ships of an event beside its raw line: its compact form, a head
    without the raw line behind it (:func:`held_form` joins them)."""
    kind = event["type"]
    if kind == "heartbeat":
        return head_form(event, raw)
    if kind == "route_pull":
        if event.get("via_default") and event["result"] == "SUCCESS":
            return None
        return SLIM + orjson.dumps({k: v for k, v in event.items() if k != "queues"}).decode()
    if kind != "send" or event["status"] not in DeliveredStatus:
        return None
    if event.get("auto_created") or MARK in event["cluster"]:
        return None
    return f"{MARK}{event['cluster']}{MARK}{event['status']}{MARK}{event['topic']}"


def held_form(form: str, raw: str | bytes) -> str:
    """A shipped form and its event's raw line -> the form the intake holds: a head with its
    raw line after a newline, any other form as it is."""
    if not form.startswith(HEAD):
        return form
    return f"{form}\n{raw.decode() if isinstance(raw, bytes) else raw}"


def head_form(event: dict[str, Any], raw: str | bytes) -> str | None:
    """A full registration with a data version -> its head (every field but ``topics``); held
    with its raw line after a newline (:func:`held_form`; the raw line holds no newline: it is
    one line of the stream)."""
    if not event["full"] or event.get("shutdown") or event.get("data_version") is None:
        return None
    if (b"\n" in raw) if isinstance(raw, bytes) else ("\n" in raw):
        return None
    return HEAD + orjson.dumps({k: v for k, v in event.items() if k != "topics"}).decode()


def slim(value: str) -> dict[str, Any]:
    """A held route pull's slim form -> the pull without its queues."""
    event: dict[str, Any] = orjson.loads(value[1:])
    return event


def head_of(value: str) -> dict[str, Any]:
    """A held registration's head form -> its head, decoded (its raw line, tens of kilobytes,
    is not copied: :func:`raw_of` when it is needed)."""
    head: dict[str, Any] = orjson.loads(value[1 : value.index("\n")])
    return head


def raw_of(value: str) -> str:
    """A held registration's head form -> its raw line."""
    return value[value.index("\n") + 1 :]


def delivered(value: str) -> tuple[str, str, str]:
    """A delivered send's compact held form -> its ``cluster``, ``status`` and ``topic``."""
    _, cluster, status, topic = value.split(MARK, 3)
    return cluster, status, topic


def expand(value: str, ts: int, seq: int) -> dict[str, Any]:
    """A compact held form, with its event's ``ts`` and ``seq`` (as held: -1 for none) -> the
    event it stands for."""
    cluster, status, topic = delivered(value)
    return {
        "type": "send",
        "ts": ts,
        "seq": None if seq == NO_SEQ else seq,
        "cluster": cluster,
        "status": status,
        "topic": topic,
    }
