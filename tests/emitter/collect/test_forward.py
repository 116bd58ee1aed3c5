"""``routewatch collect --forward``: the client library's spool files, written here with the
project's own :class:`SpoolSink` (the library writes exactly its format), forwarded to a spool
sink and to the harness's real Kafka broker: unchanged, in order, each file removed only once its
events are delivered; bad lines skipped and counted; a file that cannot be read, retried."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

import emitter.collect.forward as forward_module
from emitter.collect.collector import Collector
from emitter.collect.derive import Deriver
from emitter.collect.forward import Forwarder
from emitter.collect.metrics import CollectorMetrics
from emitter.sinks import KafkaSink, Sink, SpoolSink, kafka_key
from routewatch.cli import main
from routewatch.codec import encode, parse
from routewatch.errors import RoutewatchError
from routewatch.events import Event, QueueData, RoutePull, Send
from routewatch.testing.kafka import KafkaBroker, running_broker
from routewatch.testing.processes import wait_for

TS = 1_760_000_000_000


def _events(n: int, run: str = "a") -> list[Event]:
    """A producer's pulls and sends, over two clusters and three topics."""
    events: list[Event] = []
    for i in range(n):
        cluster, topic = f"c{i % 2}", f"topic-{i % 3}"
        common: dict[str, Any] = {
            "ts": TS + i,
            "cluster": cluster,
            "event_id": f"hook-{run}-{i}",
            "seq": i,
        }
        if i % 2 == 0:
            events.append(
                RoutePull(
                    **common,
                    client_id=f"10.0.0.9@{run}",
                    group="pg",
                    role="producer",
                    namesrv="10.0.0.100:9876",
                    topic=topic,
                    result="SUCCESS",
                    queues=[QueueData(broker="b", read_queue_nums=4, write_queue_nums=4, perm=6)],
                    via_default=False,
                    create_topic_key="TBW102",
                    client_default_topic_queue_nums=4,
                )
            )
        else:
            events.append(
                Send(
                    **common,
                    client_id=f"10.0.0.9@{run}",
                    group="pg",
                    topic=topic,
                    broker="b",
                    queue_id=i % 4,
                    default_topic="TBW102",
                    default_topic_queue_nums=4,
                    status="SEND_OK",
                )
            )
    return events


def _hook_spool(directory: Path, events: list[Event], per_file: int) -> list[bytes]:
    """Published files as the client library writes them; their lines, in publishing order."""
    sink = SpoolSink(directory, roll_events=per_file, roll_interval_s=3600)
    lines = [encode(e) for e in events]
    for raw in lines:
        sink.write(raw, b"unused")
    sink.close()
    return lines


def _published(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if not p.name.startswith("."))


def _spool_lines(directory: Path) -> list[bytes]:
    return [line for p in _published(directory) for line in p.read_bytes().splitlines()]


def _forwarder(dirs: list[Path], sink: Sink) -> tuple[Forwarder, CollectorMetrics]:
    counters = CollectorMetrics()
    return Forwarder(dirs, sink, counters), counters


def _count(counters: CollectorMetrics, what: str, **labels: str) -> float:
    return counters.value(f"routewatch_collect_forward_{what}_total", **labels)


def test_published_files_reach_a_spool_unchanged_in_order_and_are_removed(tmp_path: Path) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    written = _hook_spool(hook, _events(10, "a"), per_file=4)
    written += _hook_spool(hook, _events(5, "b"), per_file=5)  # a second producer
    writing = SpoolSink(hook, roll_events=100, roll_interval_s=3600)  # a file not published yet
    writing.write(encode(_events(1, "c")[0]), b"unused")
    lines = _spool_lines(hook)  # in name order: publishing order, producers interleaved
    assert sorted(lines) == sorted(written)
    forwarder, counters = _forwarder([hook], SpoolSink(out, 5_000, 3600))

    assert forwarder.forward_once() == 15

    assert _spool_lines(out) == lines
    assert _published(hook) == []
    assert [p.name for p in hook.iterdir()] == [writing._tmp.name]  # type: ignore[union-attr]
    assert (_count(counters, "files"), _count(counters, "events")) == (4, 15)
    assert forwarder.forward_once() == 0  # nothing is sent twice

    writing.close()
    assert forwarder.forward_once() == 1
    assert len(_spool_lines(out)) == 16 and _published(hook) == []


class _Recording:
    """A sink that notes, at each delivery (its ``flush``), which hook files still exist."""

    def __init__(self, hook: Path) -> None:
        self.hook = hook
        self.lines: list[bytes] = []
        self.at_delivery: list[tuple[int, int]] = []  # (events delivered, files left)

    def write(self, raw: bytes, key: bytes) -> None:
        self.lines.append(raw)

    def poll(self) -> None:
        pass

    def flush(self) -> bool:
        self.at_delivery.append((len(self.lines), len(_published(self.hook))))
        return True

    def close(self) -> int:
        return len(self.lines)


def test_files_are_removed_only_once_their_events_are_delivered(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    lines = _hook_spool(hook, _events(12), per_file=3)
    sink = _Recording(hook)
    forwarder, _ = _forwarder([hook], sink)

    forwarder.forward_once()

    assert sink.lines == lines
    assert sink.at_delivery == [(12, 4)]  # all four files were still there when delivered
    assert _published(hook) == []


def test_files_whose_delivery_fails_stay_and_are_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    lines = _hook_spool(hook, _events(6), per_file=3)
    forwarder, counters = _forwarder([hook], SpoolSink(out, 5_000, 3600))
    monkeypatch.setattr(SpoolSink, "flush", lambda self: False)

    assert forwarder.forward_once() == 0
    assert len(_published(hook)) == 2
    assert _count(counters, "errors", reason="delivery") == 1

    monkeypatch.undo()
    assert forwarder.forward_once() == 6
    assert _published(hook) == []
    assert _spool_lines(out)[-6:] == lines  # at least once: sent again, whole


def test_bad_lines_are_skipped_counted_and_logged_once_per_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    hook.mkdir()
    good = [encode(e) for e in _events(3)]
    bad_event = b'{"v":1,"type":"send","ts":1}'  # JSON, but not a contract event
    assert not isinstance(parse(good[0]), type(parse(bad_event)))
    name = "00000000000000000001-1-run-00000001.jsonl"
    (hook / name).write_bytes(b"\n".join([good[0], b"not json", good[1], bad_event, good[2]]))
    forwarder, counters = _forwarder([hook], SpoolSink(out, 5_000, 3600))

    with caplog.at_level(logging.WARNING, logger="routewatch.collect"):
        assert forwarder.forward_once() == 3

    assert _spool_lines(out) == good
    assert _count(counters, "lines_skipped") == 2 and _count(counters, "events") == 3
    assert _published(hook) == []
    (record,) = caplog.records
    assert record.getMessage().startswith(
        f"{hook / name}: skipped 2 line(s) that are not contract events (the first, line 2: "
    )


def test_a_file_that_cannot_be_read_stays_and_is_forwarded_at_the_next_look(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    lines = _hook_spool(hook, _events(9), per_file=3)
    stuck = _published(hook)[1]
    real_read = forward_module._read

    def read(path: Path) -> bytes:
        if path == stuck:
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    monkeypatch.setattr(forward_module, "_read", read)
    forwarder, counters = _forwarder([hook], SpoolSink(out, 5_000, 3600))

    with caplog.at_level(logging.WARNING, logger="routewatch.collect"):
        assert forwarder.forward_once() == 6  # the others go on
        assert forwarder.forward_once() == 0  # still unreadable: tried again, logged once

    assert _published(hook) == [stuck]
    assert _spool_lines(out) == lines[:3] + lines[6:]
    assert _count(counters, "errors", reason="read") == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot read {stuck} (Permission denied); it stays, and is tried again at the next look."
    ]

    monkeypatch.setattr(forward_module, "_read", real_read)
    assert forwarder.forward_once() == 3
    assert _published(hook) == []
    assert _spool_lines(out)[-3:] == lines[3:6]


def test_a_file_that_cannot_be_removed_is_not_sent_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    lines = _hook_spool(hook, _events(3), per_file=3)
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.parent == hook:
            raise PermissionError(13, "Permission denied")
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    forwarder, counters = _forwarder([hook], SpoolSink(out, 5_000, 3600))
    assert forwarder.forward_once() == 3
    assert forwarder.forward_once() == 0
    assert len(_published(hook)) == 1 and _count(counters, "errors", reason="remove") == 2

    monkeypatch.undo()
    assert forwarder.forward_once() == 0
    assert _published(hook) == [] and _spool_lines(out) == lines
    assert _count(counters, "files") == 1


def test_the_collector_forwards_in_its_loop_until_stopped(tmp_path: Path) -> None:
    hook, other, out = tmp_path / "hook", tmp_path / "other", tmp_path / "out"
    counters = CollectorMetrics()
    sink = SpoolSink(out, 5_000, 0.05)
    forwarder = Forwarder([hook, other], sink, counters)
    collector = Collector(
        None, Deriver(30), sink, counters, 10, forwarder=forwarder, forward_interval_s=0.05
    )
    loop = threading.Thread(target=collector.run)
    loop.start()
    try:
        lines = _hook_spool(hook, _events(4, "a"), per_file=2)  # before `other` exists
        wait_for(lambda: _spool_lines(out) == lines, 10, "the first files forwarded")
        lines += _hook_spool(other, _events(3, "b"), per_file=2)
        wait_for(lambda: _spool_lines(out) == lines, 10, "the other directory's files forwarded")
    finally:
        collector.stop()
        loop.join(10)
    assert not loop.is_alive()
    assert _published(hook) == _published(other) == []
    assert "7 client events forwarded from 4 files" in counters.summary()


# Kafka


def _consume(broker: KafkaBroker, topic: str, count: int) -> list[tuple[bytes, bytes]]:
    """The topic's first ``count`` records (fewer if no more come within 10 s)."""
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        consumer_timeout_ms=10_000,
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = [(r.key, r.value) for _, r in zip(range(count), consumer, strict=False)]
    consumer.close()
    return got


def _kafka_sink(broker: KafkaBroker, topic: str, retries: int = 2) -> KafkaSink:
    return KafkaSink(
        broker.bootstrap,
        topic,
        None,
        acks="all",
        linger_ms=5,
        batch_bytes=4_000,
        compression="none",
        retries=retries,
    )


@pytest.mark.kafka
def test_forwarded_events_reach_kafka_unchanged_in_order_after_delivery(
    kafka_broker: KafkaBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = tmp_path / "hook"
    _hook_spool(hook, _events(40, "a"), per_file=7)
    _hook_spool(hook, _events(10, "b"), per_file=10)
    lines = _spool_lines(hook)  # in name order
    topic = f"forward-{uuid.uuid4().hex[:8]}"  # auto-created with one partition: one order
    kafka = _kafka_sink(kafka_broker, topic)
    forwarder, counters = _forwarder([hook], kafka)
    at_removal: list[int] = []
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        at_removal.append(kafka.delivered)
        real_unlink(self, missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    try:
        assert forwarder.forward_once() == 50
    finally:
        monkeypatch.undo()
        kafka.close()

    assert at_removal == [50] * 7
    assert _published(hook) == []
    expected = [(kafka_key(parse(raw)), raw) for raw in lines]  # type: ignore[arg-type]
    assert _consume(kafka_broker, topic, len(lines)) == expected
    assert (_count(counters, "files"), _count(counters, "events")) == (7, 50)


@pytest.fixture
def own_broker() -> Iterator[KafkaBroker]:
    """A broker of this test's own: restarting the session's would disturb other tests."""
    with running_broker() as broker:
        yield broker


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.kafka
@pytest.mark.slow
def test_files_stay_while_kafka_is_down_and_go_once_it_is_back(
    own_broker: KafkaBroker, tmp_path: Path
) -> None:
    hook = tmp_path / "hook"
    topic = f"forward-{uuid.uuid4().hex[:8]}"
    kafka = _kafka_sink(own_broker, topic, retries=5)
    forwarder, counters = _forwarder([hook], kafka)
    lines = _hook_spool(hook, _events(5, "a"), per_file=5)
    assert forwarder.forward_once() == 5

    restart = threading.Thread(target=own_broker.restart_kafka)
    restart.start()
    try:
        wait_for(lambda: not _listening(own_broker.port), 60, "Kafka stopping")
        lines += _hook_spool(hook, _events(5, "b"), per_file=5)
        waiting = threading.Thread(target=forwarder.forward_once)  # waits for the delivery
        waiting.start()
        seen_down = []

        def back() -> bool:
            down = not _listening(own_broker.port)
            if down:
                seen_down.append(len(_published(hook)))
            return not down

        wait_for(back, 120, "Kafka listening again")
        waiting.join(150)
        assert not waiting.is_alive()
        # had the sink given up on a batch meanwhile, the file is still there: the next look
        # sends it again
        wait_for(
            lambda: forwarder.forward_once() >= 0 and not _published(hook),
            120,
            "the file forwarded once Kafka is back",
            interval=1,
        )
    finally:
        restart.join(150)
        with contextlib.suppress(RoutewatchError):  # the events it gave up on, sent again
            kafka.close()
    assert seen_down and set(seen_down) == {1}  # kept all the while Kafka was down
    got = [raw for _, raw in _consume(own_broker, topic, 100)]
    assert list(dict.fromkeys(got)) == lines  # at least once, in order
    assert _count(counters, "events") >= 10


def test_collect_forward_once_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hook, out = tmp_path / "hook", tmp_path / "out"
    _hook_spool(hook, _events(6), per_file=4)
    lines = _spool_lines(hook)
    monkeypatch.delenv("ROUTEWATCH_COLLECT_NAMESRV", raising=False)
    monkeypatch.setenv("ROUTEWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ROUTEWATCH_SPOOL_DIR", str(out))

    assert main(["collect", "--forward", str(hook), "--to", "spool", "--once"]) == 0

    assert _spool_lines(out) == lines and _published(hook) == []
    assert "6 client events forwarded from 2 files" in capsys.readouterr().err


def test_a_sink_that_gave_up_on_events_still_gets_the_stop_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = tmp_path / "hook"
    _hook_spool(hook, _events(2), per_file=2)
    monkeypatch.delenv("ROUTEWATCH_COLLECT_NAMESRV", raising=False)
    monkeypatch.setenv("ROUTEWATCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ROUTEWATCH_SPOOL_DIR", str(tmp_path / "out"))
    given_up = "1 event(s) could not be delivered to Kafka at 127.0.0.1:1, topic t (x); 0 were."

    def close(self: SpoolSink) -> int:  # as the Kafka sink closes after giving up on an event
        raise RoutewatchError(given_up)

    monkeypatch.setattr(SpoolSink, "close", close)

    assert main(["collect", "--forward", str(hook), "--to", "spool", "--once"]) == 2

    err = capsys.readouterr().err.splitlines()
    assert err[-2].startswith("routewatch collect: stopped; ")
    assert "2 client events forwarded from 1 files" in err[-2]
    assert err[-1] == f"routewatch: {given_up}"
