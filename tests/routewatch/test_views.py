"""Store views on literal change rows, on SQLite and on PostgreSQL."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

from routewatch.changes import (
    BrokerState,
    ChangeRow,
    ClusterClock,
    Config,
    RouteChange,
    TopicCreated,
    encode_broker,
    encode_clock,
    encode_route,
    encode_topic,
)
from routewatch.store import Store, open_store
from routewatch.store.views import (
    TopicIndex,
    decode_topic_cursor,
    encode_topic_cursor,
    route_windows,
    store_version,
    topic_index,
    topic_items,
    topic_routes,
    topic_view,
)

QUEUES = (4, 4, 6)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    store = open_store(store_url)
    try:
        yield store
    finally:
        store.close()


def _broker(
    ns: str, broker: str, live: bool, *, cluster: str = "C", broker_id: int = 0
) -> ChangeRow:
    state = BrokerState((ns, broker, broker_id), "x:1", live, False, True, "usable", 1)
    return encode_broker(cluster, state)


def _route(
    at: int,
    broker: str,
    config: Config | None = QUEUES,
    *,
    topic: str = "T",
    ns: str = "ns",
    cluster: str = "C",
    broker_id: int = 0,
) -> ChangeRow:
    return encode_route(cluster, RouteChange(topic, (ns, broker, broker_id), at, config))


def _auto_created(topic: str, at: int, cluster: str = "C") -> ChangeRow:
    return encode_topic(cluster, TopicCreated(topic, at))


def _clock(cluster: str, at: int) -> ChangeRow:
    return encode_clock(cluster, ClusterClock(at, at, 0))


# Cluster C: masters a (live), b (live on one NameServer of two: live), c (expired), and a's
# slave; cluster D: one master, expired (no expected broker: coverage unknown).
BROKERS = [
    _broker("ns1", "a", True),
    _broker("ns2", "a", True),
    _broker("ns1", "b", True),
    _broker("ns2", "b", False),
    _broker("ns1", "c", False),
    _broker("ns1", "a", True, broker_id=1),
    _broker("ns1", "x", False, cluster="D"),
]
ROUTES = [
    *(_route(10, b, topic="Full", ns=ns) for b in ("a", "b") for ns in ("ns1", "ns2")),
    _route(10, "a", topic="Half", ns="ns1"),
    _route(10, "a", topic="Half", ns="ns1", broker_id=1),
    _route(10, "c", topic="Half", ns="ns2"),
    _route(10, "a", topic="Gone"),
    _route(40, "a", None, topic="Gone"),
    _route(10, "b", topic="Auto", ns="ns1"),
    _auto_created("Auto", 5),
    _auto_created("OnlyAuto", 7),
    *(_route(10, b, topic="TBW102") for b in ("a", "b")),
    _route(10, "x", topic="Lonely", cluster="D"),
]
# The order of GET /topics: coverage ascending, unknown last, then cluster and topic.
ORDER = [
    ("C", "Gone", 0.0),
    ("C", "OnlyAuto", 0.0),
    ("C", "Auto", 0.5),
    ("C", "Half", 0.5),
    ("C", "Full", 1.0),
    ("C", "TBW102", 1.0),
    ("D", "Lonely", None),
]


@pytest.fixture
def fleet(store: Store) -> Store:
    store.write_batch("j", 0, [*BROKERS, *ROUTES, _clock("C", 50), _clock("D", 50)])
    return store


def _index(store: Store) -> TopicIndex:
    with store.snapshot():
        return topic_index(store, store_version(store))


def _names(topics: Any) -> list[str]:
    return [t.topic for t in topics]


def test_summaries_count_the_live_masters_holding_the_topic_on_any_namesrv(
    fleet: Store,
) -> None:
    index = _index(fleet)

    assert [(t.cluster, t.topic, t.coverage) for t in index.topics] == ORDER
    by_name = {t.topic: t for t in index.topics}
    assert (by_name["Auto"].auto_created, by_name["Auto"].auto_created_at) == (True, 5)
    assert (by_name["OnlyAuto"].auto_created, by_name["Half"].auto_created) == (True, False)
    assert [t.topic for t in index.topics if t.system] == ["TBW102"]
    assert index.brokers.expected == {"C": ["a", "b"]}


def test_items_have_the_routes_per_namesrv_of_the_topics_asked_for(fleet: Store) -> None:
    index = _index(fleet)
    half = next(t for t in index.topics if t.topic == "Half")

    (item,) = topic_items(fleet, index.brokers, [half])

    assert item.brokers == ["a", "c"]
    assert item.expected_brokers == ["a", "b"]
    assert item.model_dump()["namesrvs"] == {
        "ns1": [
            {"broker": "a", "broker_id": 0, "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6},
            {"broker": "a", "broker_id": 1, "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6},
        ],
        "ns2": [
            {"broker": "c", "broker_id": 0, "read_queue_nums": 4, "write_queue_nums": 4, "perm": 6}
        ],
    }
    assert set(topic_routes(fleet, [("C", "Half"), ("D", "Lonely")])) == {
        ("C", "Half"),
        ("D", "Lonely"),
    }


def test_one_topic_read_alone_is_the_same_as_listed(fleet: Store) -> None:
    index = _index(fleet)
    listed = topic_items(fleet, index.brokers, index.topics)

    alone = [topic_view(fleet, item.cluster, item.topic) for item in listed]

    assert alone == listed
    assert topic_view(fleet, "C", "Nope") is None
    assert topic_view(fleet, "D", "Full") is None


def test_a_topic_that_lost_every_route_is_listed_with_coverage_zero(store: Store) -> None:
    store.write_batch(
        "j",
        0,
        [
            _broker("ns", "a", True),
            _broker("ns", "b", True),
            _route(10, "a", (4, 4, 6)),
            _route(40, "a", None),
        ],
    )

    view = topic_view(store, "C", "T")

    assert view is not None
    assert (view.topic, view.coverage, view.brokers) == ("T", 0.0, [])


def test_pages_follow_the_order_and_the_filters(fleet: Store) -> None:
    index = _index(fleet)

    first = index.page(limit=3)
    rest = index.page(after=first.topics[-1].sort_key, limit=10)

    assert (_names(first.topics), first.total, first.more) == (
        ["Gone", "OnlyAuto", "Auto"],
        7,
        True,
    )
    assert (_names(rest.topics), rest.total, rest.more) == (
        ["Half", "Full", "TBW102", "Lonely"],
        7,
        False,
    )
    below = index.page(coverage_below=0.5, limit=10)
    assert (_names(below.topics), below.total) == (["Gone", "OnlyAuto"], 2)
    assert _names(index.page(coverage_below=1, limit=10).topics) == _names(index.topics[:4])
    assert _names(index.page(cluster="D", limit=10).topics) == ["Lonely"]
    assert index.page(cluster="D", coverage_below=1, limit=10) == ([], 0, False)
    assert index.page(cluster="E", limit=10) == ([], 0, False)
    beyond = index.page(coverage_below=0.5, after=(1.0, "C", "Full"), limit=10)
    assert beyond == ([], 2, False)


def test_a_topic_cursor_names_a_position_and_nothing_else() -> None:
    key = (0.5, "C", "Half")

    assert decode_topic_cursor(encode_topic_cursor(key)) == key
    assert decode_topic_cursor(encode_topic_cursor((2.0, "D", "x"))) == (2.0, "D", "x")
    for bad in [
        "zzz",
        "",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(b'[true, "C", "T"]').decode(),
        base64.urlsafe_b64encode(b'["0.5", "C", "T"]').decode(),
        base64.urlsafe_b64encode(b'[0.5, "C", 3]').decode(),
        base64.urlsafe_b64encode(b'{"a": 1, "b": 2, "c": 3}').decode(),
    ]:
        with pytest.raises(ValueError, match="the cursor is not one this API returned"):
            decode_topic_cursor(bad)


def test_the_store_version_changes_with_every_batch_and_only_then(fleet: Store) -> None:
    before = store_version(fleet)

    assert store_version(fleet) == before
    fleet.write_batch("j", 1, [_route(60, "b", topic="Half"), _clock("C", 60)])
    after = store_version(fleet)
    fleet.write_batch("j", 2, [])  # a batch with no change rows at all

    assert before != after != store_version(fleet)


def test_a_snapshot_does_not_see_a_batch_committed_meanwhile(fleet: Store, store_url: str) -> None:
    reader = Store(store_url, readonly=True)
    try:
        with reader.snapshot():
            seen = store_version(reader)
            fleet.write_batch("j", 1, [_route(60, "b", topic="Half"), _clock("C", 60)])
            assert store_version(reader) == seen
            assert _index(fleet).page(limit=10) != topic_index(reader, seen).page(limit=10)
        assert store_version(reader) != seen
    finally:
        reader.close()


def test_route_windows_list_the_brokers_whose_interval_overlaps_each_window(
    store: Store,
) -> None:
    store.write_batch(
        "j", 0, [_route(10, "a", (4, 4, 6)), _route(25, "b", (4, 4, 6)), _route(40, "a", None)]
    )

    windows = route_windows(store, "C", "T", 0, 60, 20)

    assert [(w.start, w.end, w.brokers) for w in windows] == [
        (0, 20, ["a"]),
        (20, 40, ["a", "b"]),
        (40, 60, ["b"]),
    ]
