"""Store views on literal change rows."""

from __future__ import annotations

from pathlib import Path

import orjson

from routewatch.store import ChangeRow, open_store
from routewatch.store.views import route_windows, topic_views


def _broker(ns: str, broker: str, live: bool) -> ChangeRow:
    state = {
        "addr": "x:1",
        "live": live,
        "shutdown": False,
        "auto_create": True,
        "template": "usable",
        "last_heartbeat": 1,
    }
    return ChangeRow(
        "C", "broker", orjson.dumps([ns, broker, 0]).decode(), 1, orjson.dumps(state).decode()
    )


def _route(at: int, broker: str, config: list[int] | None) -> ChangeRow:
    return ChangeRow(
        "C",
        "route",
        orjson.dumps(["T", "ns", broker, 0]).decode(),
        at,
        orjson.dumps(config).decode(),
    )


def test_a_topic_that_lost_every_route_is_listed_with_coverage_zero(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'rw.db'}")
    store.write_batch(
        "j",
        0,
        [
            _broker("ns", "a", True),
            _broker("ns", "b", True),
            _route(10, "a", [4, 4, 6]),
            _route(40, "a", None),
        ],
    )

    (view,) = topic_views(store)

    assert (view["topic"], view["coverage"], view["brokers"]) == ("T", 0.0, [])


def test_route_windows_list_the_brokers_whose_interval_overlaps_each_window(
    tmp_path: Path,
) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'rw.db'}")
    store.write_batch(
        "j", 0, [_route(10, "a", [4, 4, 6]), _route(25, "b", [4, 4, 6]), _route(40, "a", None)]
    )

    windows = route_windows(store, "C", "T", 0, 60, 20)

    assert [(w["start"], w["end"], w["brokers"]) for w in windows] == [
        (0, 20, ["a"]),
        (20, 40, ["a", "b"]),
        (40, 60, ["b"]),
    ]
