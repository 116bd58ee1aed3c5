from __future__ import annotations

import dataclasses

import orjson
import pytest

from routewatch.codec import encode, to_wire
from routewatch.events import Event
from routewatch.validation import validate
from tests.support.samples import sample_events


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: e.event_id)
def test_every_event_is_encoded_as_a_valid_line_with_each_of_its_values(event: Event) -> None:
    wire = orjson.loads(encode(event))

    assert validate(wire) is None
    values = orjson.loads(orjson.dumps(dataclasses.asdict(event)))
    assert {k: v for k, v in wire.items() if k not in ("v", "type")} == {
        k: v for k, v in values.items() if k in wire
    }
    assert all(values[k] is None for k in values.keys() - wire.keys())


def test_wire_form_puts_v_and_type_first_and_leaves_absent_optionals_out() -> None:
    hb = sample_events()[1]
    wire = to_wire(hb)

    assert list(wire)[:6] == ["v", "type", "ts", "cluster", "event_id", "broker"]
    assert (wire["v"], wire["type"], wire["shutdown"]) == (1, "heartbeat", True)
    assert not {"seq", "data_version", "part", "parts"} & wire.keys()


def test_nullable_fields_are_written_as_null() -> None:
    failed_send = sample_events()[-1]

    wire = orjson.loads(encode(failed_send))

    assert (wire["broker"], wire["queue_id"]) == (None, None)


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: e.event_id)
def test_encode_writes_exactly_the_wire_form(event: Event) -> None:
    """encode's fast path gives the bytes of to_wire's object."""
    assert encode(event) == orjson.dumps(to_wire(event))
