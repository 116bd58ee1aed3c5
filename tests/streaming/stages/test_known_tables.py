"""Topic tables validated before are recognised by their text, and every line still parses as
``routewatch.codec.parse`` parses it: the same events (but a recognised table), the same bad
input with the same reason and detail."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from routewatch.codec import parse
from routewatch.validation import BadInput
from streaming.stages.known_tables import KnownTables, _cost

TABLE = orjson.dumps(
    {f"topic-{i}": {"read_queue_nums": 8, "write_queue_nums": 8, "perm": 6} for i in range(40)}
).decode()
OTHER = TABLE.replace('"topic-0"', '"topic-x"')
BAD_TABLE = TABLE.replace('"perm":6}}', '"perm":"6"}}')  # (its last record's perm a string)
# equal to Python (True == 1), not to the contract: perm is an int
PERM_ONE = TABLE.replace('"perm":6', '"perm":1')
PERM_TRUE = TABLE.replace('"perm":6', '"perm":true')
BEFORE = (
    '{"v":1,"type":"heartbeat","ts":1000,"cluster":"C","event_id":"b-1","seq":1,'
    '"broker":"b","broker_addr":"10.0.0.1:10911","broker_id":0,"namesrv":"10.0.0.100:9876",'
    '"auto_create_topic_enable":false,"default_topic_queue_nums":8,"full":true,'
)
AFTER = ',"data_version":"1-1"}'
KEY = '"topics":'


def line(table: str = TABLE, before: str = BEFORE, after: str = AFTER, key: str = KEY) -> str:
    return before + key + table + after


def same(got: dict[str, Any] | BadInput, want: dict[str, Any] | BadInput) -> bool:
    """``got`` is ``want``, but for a table left out."""
    if isinstance(want, BadInput) or isinstance(got, BadInput):
        return got == want
    return {**got, "topics": want["topics"]} == want and got["topics"] in ({}, want["topics"])


def test_a_table_seen_before_is_not_decoded_again() -> None:
    known = KnownTables()
    first = known.parse(line())
    second = known.parse(line(after=',"data_version":"1-1","part":0}'))

    assert first == parse(line())
    assert isinstance(second, dict) and second["topics"] == {} and second["part"] == 0
    assert list(known.tables) == [TABLE]


def test_a_table_is_remembered_only_from_a_valid_heartbeat() -> None:
    known = KnownTables()
    for text in (
        line(before=BEFORE.replace('"ts":1000', '"ts":"x"')),  # bad envelope
        line(BAD_TABLE),
        line(before=BEFORE.replace('"heartbeat"', '"route_pull"')),
        line(before=BEFORE + '"x":' + TABLE + ","),  # an object first: parsed whole
        line(after=',"topics":' + OTHER + AFTER),  # the key twice: the last one counts
    ):
        known.parse(text)
    assert known.size == 0

    known.parse(line())
    known.parse(line())
    assert list(known.tables) == [TABLE]
    assert known.size == _cost(TABLE, TABLE[:96])


ENVELOPES = st.sampled_from(
    [
        BEFORE,
        BEFORE.replace('"ts":1000', '"ts":"x"'),
        BEFORE.replace('"cluster":"C",', ""),
        BEFORE.replace('"heartbeat"', '"route_pull"'),
        BEFORE.replace('"heartbeat"', '"send"'),
        BEFORE.replace('"v":1', '"v":2'),
        BEFORE + '"x":' + TABLE + ",",
        BEFORE + '"x":{"topics":' + TABLE + "},",
        BEFORE + '"topics":' + OTHER + ",",  # the key twice: the last one counts
        BEFORE + '"topics":' + PERM_TRUE + ",",
        BEFORE + '"name":"a\\"topics\\":",',
    ]
)
TABLES = st.sampled_from(
    [TABLE, OTHER, BAD_TABLE, PERM_ONE, PERM_TRUE, "{}", TABLE[:-1], TABLE + " ", '{"topics":{}}']
)
AFTERS = st.sampled_from([AFTER, ',"topics":' + TABLE + AFTER, "}", AFTER[:-1], AFTER + "x"])
KEYS = st.sampled_from(['"topics":', '"topics": ', '"topics" :', '"topic":'])


@settings(max_examples=400, deadline=None)
@given(
    lines=st.lists(st.tuples(TABLES, ENVELOPES, AFTERS, KEYS), min_size=1, max_size=8),
    limit=st.sampled_from([_cost(TABLE, TABLE[:96]), 10 * _cost(TABLE, TABLE[:96])]),
)
def test_every_line_parses_as_the_contract_parses_it(
    lines: list[tuple[str, str, str, str]], limit: int
) -> None:
    known = KnownTables(limit)
    known.parse(line())  # (TABLE known)
    for table, before, after, key in lines:
        text = line(table, before, after, key)

        assert same(known.parse(text), parse(text)), text
        assert known.size <= limit


def test_a_lower_bound_drops_the_least_recently_seen_tables_and_0_keeps_none() -> None:
    known = KnownTables()
    tables = [TABLE.replace('"perm":6', f'"perm":{p}') for p in (2, 4, 6)]
    for table in tables:
        known.parse(line(table))
    known.parse(line(tables[0]))  # (seen again: the most recent)
    assert list(known.tables) == [tables[1], tables[2], tables[0]]

    known.bound(2 * _cost(TABLE, TABLE[:96]))
    assert list(known.tables) == [tables[2], tables[0]] and known.size <= known.limit

    known.bound(0)
    assert not known.tables and known.size == 0
    assert same(known.parse(line(tables[1])), parse(line(tables[1])))
    assert known.found is None and not known.tables  # (parsed whole, not kept)


def test_a_table_is_remembered_by_its_decoded_values_and_their_types() -> None:
    known = KnownTables()
    twice = line(PERM_TRUE, after=',"topics":' + PERM_ONE + AFTER)  # valid: the last counts
    assert not isinstance(known.parse(twice), BadInput)

    assert known.parse(line(PERM_TRUE)) == parse(line(PERM_TRUE))  # bad: perm is no int
    assert isinstance(parse(line(PERM_TRUE)), BadInput)


def test_a_table_nested_deeper_than_orjson_writes_is_parsed_not_remembered() -> None:
    deep = '{"t":{"read_queue_nums":1,"write_queue_nums":1,"perm":6,"x":' + "[" * 300
    deep += "]" * 300 + "}}"
    known = KnownTables()
    for text in (line(deep), line(deep, after=',"topics":' + TABLE + AFTER)):
        assert known.parse(text) == parse(text)
        assert not isinstance(parse(text), BadInput)
    assert not known.tables


def test_a_table_shorter_than_its_lookup_is_not_kept() -> None:
    known = KnownTables()
    short = '{"t":{"read_queue_nums":1,"write_queue_nums":1,"perm":6}}'

    assert known.parse(line(short)) == parse(line(short))
    assert not known.tables
