from __future__ import annotations

import orjson
import pytest

from routewatch.codec import decode, encode, to_wire
from routewatch.events import Event, Heartbeat, TopicConfig
from routewatch.validation import BadInput
from tests.support.samples import sample_events


@pytest.mark.parametrize("event", sample_events(), ids=lambda e: e.event_id)
def test_every_event_survives_encode_then_decode(event: Event) -> None:
    assert decode(encode(event)) == event


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


def test_unknown_extra_fields_are_ignored_at_every_level() -> None:
    wire = to_wire(sample_events()[0])
    wire["x_future"] = {"anything": [1, 2]}
    wire["topics"] = {
        "TopicA": {"read_queue_nums": 4, "write_queue_nums": 4, "perm": 6, "topic_sys_flag": 0}
    }

    event = decode(orjson.dumps(wire))

    assert isinstance(event, Heartbeat)
    assert event.topics == {"TopicA": TopicConfig(read_queue_nums=4, write_queue_nums=4, perm=6)}


def test_text_that_is_not_json_is_bad_input_with_its_reason() -> None:
    result = decode(b'{"v": 1, "type": "send"')

    assert isinstance(result, BadInput)
    assert result.reason == "not_json"
    assert result.detail.startswith("the input is not JSON")
