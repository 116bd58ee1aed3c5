"""``routewatch replay`` into stdout, the spool and a real Kafka broker."""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from kafka import KafkaConsumer, TopicPartition

from emitter.replay import Pacer, read_traces, replay
from emitter.scenarios import SCENARIOS
from emitter.sinks import ORIGIN_FILE, StdoutSink
from routewatch.codec import encode
from routewatch.testing.kafka import KafkaBroker
from routewatch.testing.processes import free_port, wait_for
from tests.support.traces import write_trace

SCENARIO = "restarted-auto-create-off-stale-tbw102"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.jsonl.gz"
    write_trace(SCENARIOS[SCENARIO].run(seed=1), path)
    return path


def _expected() -> list[bytes]:
    return [encode(e) for e in SCENARIOS[SCENARIO].run(seed=1)]


def _replay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "replay", *args],
        capture_output=True,
        env=env,
        check=False,
        timeout=300,
    )


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data"), **extra}


def test_stdout_gets_every_event_once_in_order(trace: Path, tmp_path: Path) -> None:
    result = _replay(str(trace), "--to", "stdout", "--speed", "max", env=_env(tmp_path))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == _expected()


def test_the_spool_gets_every_event_once_in_order_in_published_files(
    trace: Path, tmp_path: Path
) -> None:
    env = _env(tmp_path, ROUTEWATCH_SPOOL_ROLL_EVENTS="7")

    result = _replay(str(trace), "--to", "spool", "--speed", "max", env=env)

    assert result.returncode == 0, result.stderr
    spool = tmp_path / "data" / "spool"
    files = sorted(f for f in spool.iterdir() if f.name != ORIGIN_FILE)
    assert all(f.suffix == ".jsonl" and not f.name.startswith(".") for f in files)
    assert (spool / ORIGIN_FILE).read_text() == "replayed\n"
    assert len(files) == -(-len(_expected()) // 7)
    assert [line for f in files for line in f.read_bytes().splitlines()] == _expected()
    mtimes = [f.stat().st_mtime_ns for f in files]
    assert mtimes == sorted(mtimes) and len(set(mtimes)) == len(mtimes)
    assert f"wrote {len(_expected())} events to the spool" in result.stderr.decode()


@pytest.mark.kafka
def test_kafka_gets_every_event_once_in_order_with_the_contract_key(
    trace: Path, tmp_path: Path, kafka_broker: KafkaBroker
) -> None:
    env = _env(
        tmp_path,
        ROUTEWATCH_KAFKA_BOOTSTRAP=kafka_broker.bootstrap,
        ROUTEWATCH_KAFKA_TOPIC="replay.order",
    )

    result = _replay(str(trace), "--to", "kafka", "--speed", "max", env=env)

    assert result.returncode == 0, result.stderr
    consumer = KafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=None,
        consumer_timeout_ms=10_000,
    )
    part = TopicPartition("replay.order", 0)
    consumer.assign([part])
    consumer.seek_to_beginning(part)
    records = [r for _, r in zip(range(len(_expected())), consumer, strict=False)]
    consumer.close()
    assert [r.value for r in records] == _expected()
    for record in records:
        event = orjson.loads(record.value)
        name = event["broker"] if event["type"] == "heartbeat" else event["topic"]
        assert record.key == f"{event['cluster']}/{name}".encode()


def test_an_unreachable_kafka_is_one_sentence_naming_the_address(
    trace: Path, tmp_path: Path
) -> None:
    address = f"127.0.0.1:{free_port()}"
    env = _env(tmp_path, ROUTEWATCH_KAFKA_BOOTSTRAP=address, ROUTEWATCH_KAFKA_TOPIC="replays")

    result = _replay(str(trace), "--to", "kafka", env=env)

    assert result.returncode == 2
    message = result.stderr.decode().strip().splitlines()
    assert message[-1].startswith(f"routewatch: cannot reach Kafka at {address}")


@pytest.mark.parametrize("speed", [5.0, 20.0])
def test_speed_scales_the_gaps_between_events(speed: float, tmp_path: Path) -> None:
    events = [
        e
        for e in SCENARIOS["manual-creation-healthy"].run(seed=0)
        if e.ts < 1_767_225_600_000 + 10_000
    ]
    path = tmp_path / "short.jsonl"
    write_trace(events, path)
    span_s = (events[-1].ts - events[0].ts) / 1000
    out = io.BytesIO()
    written_at: list[float] = []

    class Timed(StdoutSink):
        def write(self, raw: bytes, key: bytes) -> None:
            written_at.append(time.monotonic())
            super().write(raw, key)

    replay(read_traces([path], False, []), Timed(out), Pacer(speed))

    took = written_at[-1] - written_at[0]
    assert took == pytest.approx(span_s / speed, rel=0.10)
    assert out.getvalue().splitlines() == [encode(e) for e in events]


def test_rebase_now_moves_the_trace_to_the_present(trace: Path, tmp_path: Path) -> None:
    before = time.time() * 1000
    result = _replay(
        str(trace), "--to", "stdout", "--speed", "max", "--rebase-time", "now", env=_env(tmp_path)
    )

    events = [orjson.loads(line) for line in result.stdout.splitlines()]
    original = [orjson.loads(line) for line in _expected()]
    assert before <= events[0]["ts"] <= time.time() * 1000
    shift = events[0]["ts"] - original[0]["ts"]
    assert [e["ts"] - shift for e in events] == [e["ts"] for e in original]
    assert [{**e, "ts": 0} for e in events] == [{**e, "ts": 0} for e in original]


def test_ctrl_c_flushes_and_leaves_no_partial_spool_file(trace: Path, tmp_path: Path) -> None:
    spool = tmp_path / "data" / "spool"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "routewatch.cli",
            "replay",
            str(trace),
            "--to",
            "spool",
            "--speed",
            "2",
            "--quiet",
        ],
        stderr=subprocess.PIPE,
        env=_env(tmp_path, ROUTEWATCH_SPOOL_ROLL_INTERVAL_S="0.2"),
    )
    wait_for(
        lambda: spool.exists() and any(f.suffix == ".jsonl" for f in spool.iterdir()),
        60,
        "a first published spool file",
    )
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)

    assert proc.returncode == 130
    published = sorted(f for f in spool.iterdir() if f.name != ORIGIN_FILE)
    lines = [line for f in published for line in f.read_bytes().splitlines()]
    assert not [f for f in published if f.name.startswith(".")]  # no partial file left
    assert 0 < len(lines) < len(_expected())
    assert lines == _expected()[: len(lines)]
    assert f"interrupted; wrote {len(lines)} events to the spool" in stderr.decode()


def test_a_bad_line_names_the_file_and_line_or_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = _expected()[:3]
    path.write_bytes(b"\n".join([good[0], b'{"v": 1}', good[1], b"nope", good[2]]) + b"\n")

    stopped = _replay(str(path), "--to", "stdout", "--speed", "max", env=_env(tmp_path))
    skipped = _replay(
        str(path), "--to", "stdout", "--speed", "max", "--skip-invalid", env=_env(tmp_path)
    )

    assert stopped.returncode == 2
    assert stopped.stderr.decode().startswith(f"routewatch: {path}, line 2: event.type is missing")
    assert stopped.stderr.decode().endswith(
        "fix the trace or pass --skip-invalid; 1 event(s) before it were written\n"
    )
    assert stopped.stdout.splitlines() == good[:1]
    assert skipped.returncode == 0
    assert skipped.stdout.splitlines() == good
    assert f"skipped 2 invalid line(s), the first: {path}, line 2" in skipped.stderr.decode()


def test_a_trace_that_is_not_a_whole_gzip_is_one_sentence(tmp_path: Path) -> None:
    # a copy cut off, or no gzip at all: one sentence, no stack trace
    cut = tmp_path / "cut.jsonl.gz"
    with gzip.open(cut, "wb") as f:
        f.write(b"".join(line + b"\n" for line in _expected()) * 50)
    cut.write_bytes(cut.read_bytes()[:2_000])
    fake = tmp_path / "fake.jsonl.gz"
    fake.write_bytes(b"not gzip")

    for path, after in ((cut, "after line "), (fake, "(Not a gzipped file (b'no')) after line 0")):
        result = _replay(str(path), "--to", "stdout", "--speed", "max", "--quiet")
        assert result.returncode == 2
        message = result.stderr.decode()
        assert message.startswith(f"routewatch: the trace {path} is not a whole gzip file (")
        assert after in message and message.endswith(": copy it again, or give it uncompressed.\n")
        assert message.count("\n") == 1


def test_simulated_and_live_events_never_share_a_spool(trace: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    spool = tmp_path / "data" / "spool"
    closed = f"127.0.0.1:{free_port()}"
    collect = [sys.executable, "-m", "routewatch.cli", "collect", "--namesrv", closed, "--once"]
    # a replay, a second replay, then a collector: refused before it polls
    assert _replay(str(trace), "--to", "spool", "--speed", "max", env=env).returncode == 0
    assert _replay(str(trace), "--to", "spool", "--speed", "max", env=env).returncode == 0
    done = subprocess.run(collect, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == (
        f"routewatch: the spool {spool} holds replayed traces (routewatch replay wrote there), "
        "and a live cluster's events must not mix with them in one job: give this command a "
        "data directory of its own (ROUTEWATCH_DATA_DIR, or ROUTEWATCH_SPOOL_DIR), or, if what "
        "it holds is no longer wanted, delete that spool and the job's store and checkpoints "
        "with `routewatch reset --spool --yes`.\n"
    )
    # the other way: a live spool refuses a replay, and keeps only the collector's files
    live = _env(tmp_path, ROUTEWATCH_DATA_DIR=str(tmp_path / "live"))
    done = subprocess.run(collect, env=live, capture_output=True, text=True, timeout=120)
    assert "no NameServer of --namesrv answered" in done.stderr  # (it claimed the spool first)
    refused = _replay(str(trace), "--to", "spool", "--speed", "max", env=live)
    assert refused.returncode == 2
    assert b"holds a live cluster's events (routewatch collect writes there), and replayed " in (
        refused.stderr
    )
    assert [f.name for f in (tmp_path / "live" / "spool").iterdir()] == [ORIGIN_FILE]


def test_a_spool_written_before_marks_existed_is_claimed(trace: Path, tmp_path: Path) -> None:
    spool = tmp_path / "data" / "spool"
    spool.mkdir(parents=True)
    (spool / "old.jsonl").write_bytes(b"")
    done = _replay(str(trace), "--to", "spool", "--speed", "max", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (spool / ORIGIN_FILE).read_text() == "replayed\n"


def test_a_replay_into_kafka_names_its_topic(trace: Path, tmp_path: Path) -> None:
    # without ROUTEWATCH_KAFKA_TOPIC, the replay would write into the live default topic
    env = {k: v for k, v in _env(tmp_path).items() if k != "ROUTEWATCH_KAFKA_TOPIC"}
    result = _replay(str(trace), "--to", "kafka", env=env)
    assert result.returncode == 2
    assert result.stderr.decode() == (
        "routewatch: replay --to kafka needs a topic of its own: set ROUTEWATCH_KAFKA_TOPIC (the "
        "default, routewatch.events, is where routewatch collect writes a live cluster's events, "
        "which replayed traces must not mix with).\n"
    )
