"""A delivered send held in its compact form, a full registration held with its head and a route
pull held slim are applied exactly as their raw lines would be; a registration of a known table
is not decoded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from emitter.fleet import FleetSpec, generate_fleet
from emitter.scenarios import SCENARIOS
from routewatch.changes import ChangeRow
from streaming.engine.compact import (
    HEAD,
    MARK,
    SLIM,
    compact,
    expand,
    head_of,
    held_form,
    raw_of,
    shipped,
    slim,
)
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.step import Step
from tests.streaming.engine.events import Trace, ms
from tests.support.traces import Arrival, arrivals

SEND = {
    "v": 1,
    "type": "send",
    "ts": 1000,
    "cluster": "C",
    "event_id": "p-1",
    "seq": 7,
    "client_id": "c",
    "group": "g",
    "topic": "T",
    "broker": "b",
    "queue_id": 0,
    "default_topic": "TBW102",
    "default_topic_queue_nums": 4,
    "status": "SEND_OK",
}


def test_a_delivered_send_is_held_as_the_fields_the_engine_reads() -> None:
    form = compact(SEND, orjson.dumps(SEND))

    assert form is not None and form.startswith(MARK) and len(form) < 20
    assert expand(form, 1000, 7) == {
        "type": "send",
        "ts": 1000,
        "seq": 7,
        "cluster": "C",
        "status": "SEND_OK",
        "topic": "T",
    }
    assert expand(form, 1000, -1)["seq"] is None  # (held without a seq)


@pytest.mark.parametrize(
    "change",
    [
        {"status": "NO_ROUTE_INFO"},  # a failure: the rules read its client and template
        {"status": "TOPIC_NOT_EXIST"},
        {"auto_created": True},  # the rules record the auto-creation
        {"cluster": f"a{MARK}b"},  # (the separator in a name: held raw)
    ],
)
def test_every_other_event_is_held_raw(change: dict[str, object]) -> None:
    event = SEND | change
    assert compact(event, orjson.dumps(event)) is None


PULL = {
    "v": 1,
    "type": "route_pull",
    "ts": 1000,
    "cluster": "C",
    "event_id": "p-2",
    "client_id": "c",
    "group": "g",
    "role": "producer",
    "namesrv": "n:9876",
    "topic": "T",
    "via_default": False,
    "create_topic_key": "TBW102",
    "client_default_topic_queue_nums": 4,
    "result": "SUCCESS",
    "queues": [
        {"broker": f"b{i}", "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
        for i in range(100)
    ],
}


def test_a_route_pull_is_held_without_its_queues() -> None:
    raw = orjson.dumps(PULL)
    form = compact(PULL, raw)

    assert form is not None and form.startswith(SLIM) and len(form) < len(raw) / 10
    assert slim(form) == {k: v for k, v in PULL.items() if k != "queues"}


def test_a_successful_pull_of_the_template_is_held_raw() -> None:
    # (its queues are the brokers a producer's auto-created route names)
    event = PULL | {"via_default": True}
    assert compact(event, orjson.dumps(event)) is None
    failed = event | {"result": "TOPIC_NOT_EXIST", "queues": []}
    assert (form := compact(failed, orjson.dumps(failed))) is not None and form.startswith(SLIM)


def test_a_head_is_shipped_without_its_raw_line_and_held_with_it() -> None:
    event = _registration()
    raw = orjson.dumps(event).decode()
    head = shipped(event, raw)

    assert head is not None and head.startswith(HEAD) and "\n" not in head
    assert len(head) < len(raw)
    assert held_form(head, raw) == held_form(head, raw.encode()) == compact(event, raw)
    other = shipped(PULL, orjson.dumps(PULL))
    assert other is not None and held_form(other, "ignored") == other


def _rows(trace: list[Arrival], *, with_compact: bool, size: int) -> list[ChangeRow]:
    step, entries = Step(2000, 300_000), MemoryEntries()
    out: list[ChangeRow] = []
    for start in range(0, len(trace), size):
        batch, forms = [], []
        for event_id, ts, seq, raw in trace[start : start + size]:
            event = orjson.loads(raw)
            batch.append((dedupe_id(event["cluster"], event_id), ts, seq, raw))
            forms.append(compact(event, raw))
        out += step(entries, batch, compact=forms if with_compact else None)
    return out + step(entries, [], final=True)


def _fleet() -> list[Arrival]:
    lines: list[bytes] = []
    generate_fleet(
        FleetSpec(clusters=2, brokers=3, topics=50, producers=20, send_rate=200, duration=40),
        lines.append,
    )
    out = []
    for raw in lines:
        event = orjson.loads(raw)
        out.append((event["event_id"], event["ts"], event.get("seq"), raw.decode()))
    return out


@pytest.mark.parametrize("name", [*sorted(SCENARIOS), "fleet"])
def test_the_changes_are_the_same_whether_events_are_held_compact_or_raw(name: str) -> None:
    trace = _fleet() if name == "fleet" else arrivals(name, seed=2)
    held_compact = sum(compact(orjson.loads(raw), raw) is not None for _, _, _, raw in trace)
    assert held_compact > 0 or name != "fleet"

    for size in (7, 500) if name != "fleet" else (300,):
        compacted = _rows(trace, with_compact=True, size=size)
        raw = _rows(trace, with_compact=False, size=size)
        assert compacted == raw


def test_the_scenarios_hold_route_pulls_both_slim_and_raw() -> None:
    forms = [
        compact(event, raw)
        for name in SCENARIOS
        for _, _, _, raw in arrivals(name, seed=2)
        if (event := orjson.loads(raw))["type"] == "route_pull"
    ]
    assert any(f is not None and f.startswith(SLIM) for f in forms)
    assert None in forms  # (template pulls, read with their queues)


def _registration() -> dict[str, Any]:
    trace = Trace()
    trace.hb(0, "b1", {"T": 4}, dv="v1")
    return trace.events[0]


def test_a_full_registration_is_held_with_its_head_before_its_raw_line() -> None:
    event = _registration()
    raw = orjson.dumps(event).decode()
    form = compact(event, raw)

    assert form is not None and form.startswith(HEAD)
    assert raw_of(form) == raw
    assert head_of(form) == {k: v for k, v in event.items() if k != "topics"}


@pytest.mark.parametrize(
    "change",
    [
        {"full": False},  # an immediate registration: its topics are always applied
        {"shutdown": True, "topics": {}},
        {"data_version": None},  # (nothing to compare: a contract without one)
    ],
)
def test_other_registrations_are_held_raw(change: dict[str, object]) -> None:
    event = {k: v for k, v in (_registration() | change).items() if v is not None}
    assert compact(event, orjson.dumps(event)) is None


def _held(event: dict[str, Any], form: str | None) -> list[ChangeRow]:
    step, entries = Step(0, 300_000), MemoryEntries()
    first = _registration()
    rows = step(
        entries,
        [(dedupe_id("C", "first"), first["ts"], None, orjson.dumps(first).decode())],
    )
    raw = orjson.dumps(event).decode()
    rows += step(
        entries,
        [(dedupe_id("C", "again"), event["ts"], None, raw)],
        compact=[form],
    )
    return rows + step(entries, [], final=True)


def test_a_registration_of_the_table_it_holds_is_not_decoded() -> None:
    again = _registration() | {"ts": _registration()["ts"] + 30_000, "event_id": "again"}
    head = HEAD + orjson.dumps({k: v for k, v in again.items() if k != "topics"}).decode()
    # the raw line behind the head is not JSON: reading it would raise
    rows = _held(again, head + "\nnot json")
    assert rows == _held(again, compact(again, orjson.dumps(again)))

    changed = again | {"data_version": "v2"}
    head = HEAD + orjson.dumps({k: v for k, v in changed.items() if k != "topics"}).decode()
    with pytest.raises(orjson.JSONDecodeError):
        _held(changed, head + "\nnot json")  # (a new version: its table is read)


def test_a_registration_after_an_immediate_one_is_decoded_though_its_version_is_known() -> None:
    trace = Trace()
    trace.hb(0, "b1", {"T": 4}, dv="v1")
    trace.hb(10, "b1", {"U": 4}, full=False)  # (an immediate registration adds U)
    trace.hb(30, "b1", {"T": 4}, dv="v1")  # the table as of v1: without U
    held = _rows(trace.arrivals(), with_compact=True, size=1)

    assert held == _rows(trace.arrivals(), with_compact=False, size=1)
    routes = [r for r in held if r.kind == "route"]
    assert [r.at for r in routes if '"U"' in r.key] == [ms(10), ms(30)], routes  # (added, dropped)
