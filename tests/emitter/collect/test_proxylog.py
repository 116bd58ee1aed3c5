"""The proxy log reader: which lines are a gRPC client's route miss, their time, and following
the file as ``tail -F`` does. On a real proxy: tests/emitter/collect/test_collect_grpc.py."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import orjson

from emitter.collect.proxylog import ProxyLog, miss_id, parse_miss
from routewatch.codec import encode
from routewatch.validation import validate

GMT8 = dt.timedelta(hours=8)
# the proxy's own configuration (rmq.proxy.logback.xml): %d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m
MISS = "2026-11-28 14:29:46 WARN GrpcRouteThreadPool-0 - get Topic [{t}] RouteInfoFromNameServer is not exist value\n"  # noqa: E501
AT = 1_795_847_386_000  # 2026-11-28 06:29:46 UTC


def test_a_miss_in_the_proxys_own_format_at_utc_plus_8() -> None:
    assert parse_miss(MISS.format(t="Orders").rstrip("\n"), GMT8) == (
        AT,
        "Orders",
        "GrpcRouteThreadPool-0",
    )
    assert dt.datetime.fromtimestamp(AT / 1000, dt.UTC).isoformat() == "2026-11-28T06:29:46+00:00"


def test_a_pattern_with_milliseconds_brackets_and_the_logger_name() -> None:
    line = (
        "2026-11-28 06:29:46.350 WARN  [GrpcRouteThreadPool-0] "
        "org.apache.rocketmq.client.impl.MQClientAPIImpl - "
        "get Topic [grpc-dff2178194] RouteInfoFromNameServer is not exist value"
    )
    # (a pattern of one's own, here in UTC: ROUTEWATCH_COLLECT_PROXY_LOG_UTC_OFFSET_H=0)
    assert parse_miss(line, dt.timedelta(0)) == (
        AT + 350,
        "grpc-dff2178194",
        "GrpcRouteThreadPool-0",
    )


def test_the_proxys_own_lookups_and_other_lines_are_not_misses() -> None:
    own = "2026-11-28 14:29:26 WARN main - get Topic [DefaultHeartBeatSyncerTopic] RouteInfoFromNameServer is not exist value"  # noqa: E501
    info = MISS.replace("WARN", "INFO").format(t="T").rstrip("\n")
    other = "2026-11-28 14:29:46 WARN GrpcRouteThreadPool-0 - something else"
    assert [parse_miss(x, GMT8) for x in (own, info, other, "", "garbage")] == [None] * 5


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def test_it_follows_the_file_from_its_end(tmp_path: Path) -> None:
    path = tmp_path / "broker_default.log"
    path.write_text(MISS.format(t="Before"))
    reader = ProxyLog(path, "C", "proxy-1")
    assert reader.read() == []  # written before the start: not read
    _append(path, "noise\n" + MISS.format(t="A") + MISS.format(t="B")[:30])
    (a,) = reader.read()  # the unended line waits for its end
    assert (a.topic, a.ts, a.cluster, a.proxy, a.thread) == (
        "A",
        AT,
        "C",
        "proxy-1",
        "GrpcRouteThreadPool-0",
    )
    assert a.seq is None and a.event_id == miss_id("proxy-1", AT, "GrpcRouteThreadPool-0", "A")
    assert validate(orjson.loads(encode(a))) is None
    # the same line read by another reader (a collector restarted with --once) is the same event
    (again,) = ProxyLog(path, "C", "proxy-1", from_start=True).read()[1:2]
    assert again == a
    _append(path, MISS.format(t="B")[30:])
    assert [e.topic for e in reader.read()] == ["B"]
    assert reader.read() == []


def test_a_rolled_file_is_read_to_its_end_and_the_new_one_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "broker_default.log"
    path.write_text("")
    reader = ProxyLog(path, "C", "proxy-1")
    _append(path, MISS.format(t="Old"))
    path.rename(tmp_path / "broker_default.1.log")  # logback's roll: renamed, then a new file
    path.write_text(MISS.format(t="New"))
    assert [e.topic for e in reader.read()] == ["Old", "New"]
    path.write_text("")  # truncated in place (copytruncate), then written
    assert reader.read() == []
    _append(path, MISS.format(t="Truncated"))
    assert [e.topic for e in reader.read()] == ["Truncated"]


def test_a_log_that_appears_later_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "broker_default.log"
    reader = ProxyLog(path, "C", "proxy-1")
    assert reader.read() == []
    path.write_text(MISS.format(t="First"))
    assert [e.topic for e in reader.read()] == ["First"]
