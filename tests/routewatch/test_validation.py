from __future__ import annotations

from typing import Any

import orjson
import pytest

from routewatch.codec import encode
from routewatch.validation import BAD_INPUT_REASONS, BadInput, validate
from tests.support.samples import sample_events

HEARTBEAT, SHUTDOWN, PRODUCER_PULL, CONSUMER_PULL, SEND_OK, SEND_FAILED = (
    orjson.loads(encode(e)) for e in sample_events()
)


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = {**base, **changes}
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(
    "wire", [HEARTBEAT, SHUTDOWN, PRODUCER_PULL, CONSUMER_PULL, SEND_OK, SEND_FAILED]
)
def test_contract_events_are_valid(wire: dict[str, Any]) -> None:
    assert validate(wire) is None


@pytest.mark.parametrize(
    ("obj", "reason", "detail"),
    [
        ([1, 2], "not_object", "an event must be a JSON object, got array"),
        (_with(SEND_OK, v=_DROP), "missing_field", "event.v is missing"),
        (_with(SEND_OK, v=2), "unknown_version", "event.v is 2; this monitor reads version 1"),
        (
            _with(SEND_OK, v=True),
            "unknown_version",
            "event.v is True; this monitor reads version 1",
        ),
        (
            _with(SEND_OK, type="metric"),
            "unknown_type",
            "event.type is 'metric', not one of heartbeat, route_pull, send, collector_round, "
            "proxy_route_miss",
        ),
        (_with(SEND_OK, type=_DROP), "missing_field", "event.type is missing"),
        (_with(HEARTBEAT, broker=_DROP), "missing_field", "heartbeat.broker is missing"),
        (_with(HEARTBEAT, ts=True), "wrong_type", "heartbeat.ts must be an int, got bool"),
        (_with(HEARTBEAT, ts=1.7e12), "wrong_type", "heartbeat.ts must be an int, got float"),
        (
            _with(HEARTBEAT, ts=2**63),
            "wrong_type",
            "heartbeat.ts is outside the 64-bit integer range",
        ),
        (_with(HEARTBEAT, full="yes"), "wrong_type", "heartbeat.full must be a bool, got string"),
        (
            _with(HEARTBEAT, broker=None),
            "wrong_type",
            "heartbeat.broker must be a string, got null",
        ),
        (
            _with(HEARTBEAT, topics=[]),
            "wrong_type",
            "heartbeat.topics must be an object, got array",
        ),
        (
            _with(
                HEARTBEAT, topics={"T": {"read_queue_nums": 4, "write_queue_nums": 4, "perm": "6"}}
            ),
            "wrong_type",
            "heartbeat.topics['T'].perm must be an int, got string",
        ),
        (
            _with(HEARTBEAT, topics={"T": {"read_queue_nums": 4, "perm": 6}}),
            "missing_field",
            "heartbeat.topics['T'].write_queue_nums is missing",
        ),
        (
            _with(HEARTBEAT, topics={"T": 7}),
            "wrong_type",
            "heartbeat.topics['T'] must be an object, got int",
        ),
        (_with(HEARTBEAT, part="0"), "wrong_type", "heartbeat.part must be an int, got string"),
        (
            _with(
                PRODUCER_PULL,
                queues=[
                    {"broker": "a", "read_queue_nums": 4, "write_queue_nums": False, "perm": 6}
                ],
            ),
            "wrong_type",
            "route_pull.queues[0].write_queue_nums must be an int, got bool",
        ),
        (
            _with(PRODUCER_PULL, via_default=_DROP),
            "missing_field",
            "route_pull.via_default is missing",
        ),
        (
            _with(PRODUCER_PULL, create_topic_key=None),
            "missing_field",
            "route_pull.create_topic_key is missing",
        ),
        (
            _with(PRODUCER_PULL, role="admin"),
            "bad_value",
            "route_pull.role is 'admin', not one of consumer, producer",
        ),
        (_with(CONSUMER_PULL, namesrv=_DROP), "missing_field", "route_pull.namesrv is missing"),
        (
            _with(SEND_OK, status="OK"),
            "bad_value",
            "send.status is 'OK', not one of FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, NO_NAMESRV, "
            "NO_ROUTE_INFO, SEND_OK, SLAVE_NOT_AVAILABLE, TIMEOUT, TOPIC_NOT_EXIST",
        ),
        (_with(SEND_OK, queue_id="2"), "wrong_type", "send.queue_id must be an int, got string"),
        (_with(SEND_OK, broker=_DROP), "missing_field", "send.broker is missing"),
    ],
)
def test_bad_input_gets_a_precise_reason(obj: Any, reason: str, detail: str) -> None:
    assert validate(obj) == BadInput(reason, detail)
    assert reason in BAD_INPUT_REASONS


def test_unknown_extra_fields_are_ignored_at_every_level() -> None:
    topics = {
        "TopicA": {"read_queue_nums": 4, "write_queue_nums": 4, "perm": 6, "topic_sys_flag": 0}
    }

    assert validate({**HEARTBEAT, "x_future": {"anything": [1, 2]}, "topics": topics}) is None


def test_consumers_may_leave_out_the_producer_only_fields() -> None:
    assert "via_default" not in CONSUMER_PULL
    assert validate(CONSUMER_PULL) is None


def test_an_explicit_null_in_an_optional_field_counts_as_absent() -> None:
    assert validate(_with(SEND_OK, seq=None, auto_created=None)) is None
    assert validate(_with(CONSUMER_PULL, via_default=None)) is None


def test_a_nullable_field_accepts_null_but_not_another_type() -> None:
    assert validate(_with(SEND_FAILED, broker=None, queue_id=None)) is None
    assert validate(_with(CONSUMER_PULL, namesrv=None)) is None
    assert validate(_with(CONSUMER_PULL, namesrv=9876)) == BadInput(
        "wrong_type", "route_pull.namesrv must be a string, got int"
    )


def _mutations(base: dict[str, Any]) -> list[Any]:
    """Every event with one field dropped, nulled, or given a value of each other type."""
    out: list[Any] = [base]
    for name in base:
        for value in (_DROP, None, True, 1, 1.5, "x", [], {}, 2**64):
            out.append(_with(base, **{name: value}))
    return out


def test_the_fast_path_accepts_exactly_what_the_precise_path_accepts() -> None:
    from routewatch.validation import _explain

    cases: list[Any] = [None, [], "x", 1]
    for base in (HEARTBEAT, SHUTDOWN, PRODUCER_PULL, CONSUMER_PULL, SEND_OK, SEND_FAILED):
        cases += _mutations(base)
    cases += [_with(HEARTBEAT, topics={"T": v}) for v in _mutations(HEARTBEAT["topics"]["TopicA"])]
    cases += [_with(PRODUCER_PULL, queues=[v]) for v in _mutations(PRODUCER_PULL["queues"][0])]

    for case in cases:
        assert (validate(case) is None) == (_explain(case) is None), case
        assert validate(case) == _explain(case)
