"""A delivered send held in its compact form is applied exactly as its raw line would be."""

from __future__ import annotations

import orjson
import pytest

from emitter.fleet import FleetSpec, generate_fleet
from emitter.scenarios import SCENARIOS
from routewatch.changes import ChangeRow
from streaming.engine.compact import MARK, compact, expand
from streaming.engine.entries import MemoryEntries
from streaming.engine.intake import dedupe_id
from streaming.engine.step import Step
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
    form = compact(SEND)

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
        {"type": "route_pull"},
        {"cluster": f"a{MARK}b"},  # (the separator in a name: held raw)
    ],
)
def test_every_other_event_is_held_raw(change: dict[str, object]) -> None:
    assert compact(SEND | change) is None


def _rows(trace: list[Arrival], *, with_compact: bool, size: int) -> list[ChangeRow]:
    step, entries = Step(2000, 300_000), MemoryEntries()
    out: list[ChangeRow] = []
    for start in range(0, len(trace), size):
        batch, forms = [], []
        for event_id, ts, seq, raw in trace[start : start + size]:
            event = orjson.loads(raw)
            batch.append((dedupe_id(event["cluster"], event_id), ts, seq, raw))
            forms.append(compact(event))
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
def test_the_changes_are_the_same_whether_sends_are_held_compact_or_raw(name: str) -> None:
    trace = _fleet() if name == "fleet" else arrivals(name, seed=2)
    held_compact = sum(compact(orjson.loads(raw)) is not None for _, _, _, raw in trace)
    assert held_compact > 0 or name != "fleet"

    for size in (7, 500) if name != "fleet" else (300,):
        compacted = _rows(trace, with_compact=True, size=size)
        raw = _rows(trace, with_compact=False, size=size)
        assert compacted == raw
