"""``routewatch evaluate`` and ``routewatch stream`` as an operator runs them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from emitter.scenarios import SCENARIOS
from routewatch.store import open_store
from routewatch.testing.processes import wait_for
from tests.support.traces import expected, shape, write_trace

pytestmark = pytest.mark.spark


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data")}


def test_evaluate_prints_each_traces_alerts_as_json(tmp_path: Path) -> None:
    traces = []
    for name in ("broker-dies", "queue-skew"):
        traces.append(tmp_path / f"{name}.jsonl.gz")
        write_trace(SCENARIOS[name].run(seed=2), traces[-1])

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "routewatch.cli",
            "evaluate",
            "--engine",
            "spark",
            *map(str, traces),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
        timeout=600,
    )

    assert result.returncode == 0, result.stderr[-2000:]
    out = orjson.loads(result.stdout)
    assert list(out) == [str(t) for t in traces]
    for name, trace in zip(("broker-dies", "queue-skew"), traces, strict=True):
        got = sorted(shape(a) for a in out[str(trace)])
        assert got == expected(name)


def test_evaluate_names_a_missing_trace_in_one_sentence(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "routewatch.cli",
            "evaluate",
            "--engine",
            "spark",
            str(missing),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
        timeout=120,
    )

    assert result.returncode == 2
    assert (
        result.stderr
        == f"routewatch: cannot read the trace {missing}: No such file or directory.\n"
    )
    assert result.stdout == ""


def test_stream_logs_each_batch_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """On its terminal, ``stream`` says what it reads and where its log goes, then one line per
    alert opened or resolved, and its stop: no line of Spark's, log4j's or the JVM's. Those,
    and the job's own log (a line per batch), are in the log file it names."""
    env = _env(tmp_path)
    spool = tmp_path / "data" / "spool"
    write_trace(SCENARIOS["broker-dies"].run(seed=1), spool / "trace.jsonl")
    log = (tmp_path / "terminal.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "routewatch.cli", "stream", "--source", "spool"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        store_url = f"sqlite:///{tmp_path / 'data' / 'routewatch.db'}"

        def alert_stored() -> bool:
            if proc.poll() is not None:
                raise AssertionError((tmp_path / "stream.log").read_text()[-3000:])
            if not (tmp_path / "data" / "routewatch.db").exists():
                return False
            return any(a["kind"] == "BROKER_EXPIRED" for a in open_store(store_url).alerts())

        wait_for(alert_stored, 300, "the stream storing BROKER_EXPIRED", interval=0.5)

        def progress_recorded() -> bool:
            rows = (
                open_store(store_url)
                .db.execute(
                    "SELECT input_rows, duration_ms, event_time_lag_ms FROM batches "
                    "WHERE input_rows > 0"
                )
                .fetchall()
            )
            # (input rows: the lines read, not Spark's count of the spool's files)
            lines = len((spool / "trace.jsonl").read_bytes().splitlines())
            complete = all(v is not None for row in rows for v in row)
            return bool(rows) and complete and sum(row[0] for row in rows) == lines

        wait_for(progress_recorded, 120, "the batch's progress in the store", interval=0.5)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    terminal = (tmp_path / "terminal.log").read_text().splitlines()
    job_log = tmp_path / "data" / "stream.log"
    assert terminal[0] == (
        f"routewatch stream: {spool} -> the store at {tmp_path / 'data' / 'routewatch.db'}; "
        f"Spark's and the job's log: {job_log}. Alerts follow as they open and resolve; Ctrl-C "
        "stops it."
    )
    assert terminal[-1] == "routewatch stream: stopped."
    store = open_store(store_url, readonly=True)
    try:
        log_entries = store.alert_log()
    finally:
        store.close()
    lines = [line.split() for line in terminal[1:-1]]
    assert {words[0] for words in lines} <= {"opened", "resolved", "updated"}
    said = [words[:3] for words in lines if words[0] in ("opened", "resolved")]
    assert said == [
        [e["change"], e["alert"]["severity"], e["alert"]["kind"]]
        for e in log_entries
        if e["change"] in ("opened", "resolved")
    ]
    assert said  # (the scenario's alerts, each in one line)
    for noise in ("WARN ", "INFO ", "Using incubator modules", "ERROR "):
        assert not [line for line in terminal if noise in line]
    text = job_log.read_text()
    assert "routewatch.stream stream started: query " in text
    assert "routewatch.stream batch 0:" in text
    assert "input rows in" in text and "event-time lag" in text
    assert "stopping (signal 15)" in text
    assert "routewatch.stream stream stopped" in text
    # absent state keys are read by design: Spark's warning for each is left out
    assert "doesn't contain key" not in text
    # nor Spark's start-up banner and hint for SparkR users, nor what every clean stop logs
    for noise in ("Using Spark's default log4j profile", "SparkR", "Failed to cancel job group"):
        assert noise not in text
    assert "NativeCodeLoader" not in text and "ResolveWriteToStream" not in text
    # nor py4j's line for each call from the JVM (the listener's, every batch and while idle)
    assert "Received command" not in text and "py4j." not in text
    # stopped in the order Spark expects: no state-store maintenance after the session
    assert "SparkEnv not active" not in text


def _evaluate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "evaluate", "--engine", "spark", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        check=False,
        timeout=600,
    )


def test_evaluate_fails_on_a_trace_with_no_event_and_says_what_it_read(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"hello\n\xff\xfe\x00\n{}\n")

    result = _evaluate(tmp_path, str(garbage))

    assert result.returncode == 2, result.stderr[-2000:]
    out = result.stdout.splitlines()
    assert out[0] == "routewatch evaluate (engine spark: the Spark job's stages)"
    assert out[1] == (
        f"{garbage}: 0 alert(s), from 0 event(s), 3 line(s) of bad input "
        "(missing_field 1, not_json 1, not_utf8 1)"
    )
    assert [line.split(": ", 2)[1] for line in out[2:]] == [  # each named by file and line
        f"{garbage}, line 1",
        f"{garbage}, line 2",
        f"{garbage}, line 3",
    ]
    # (after Spark's own start-up lines)
    assert result.stderr.splitlines()[-1] == (
        f"routewatch: {garbage} holds no event (3 line(s) of bad input (missing_field 1, "
        "not_json 1, not_utf8 1)): is it a trace of the event contract?"
    )


def test_evaluate_refuses_a_truncated_gzip_in_one_sentence_before_spark(tmp_path: Path) -> None:
    trace = tmp_path / "cut.jsonl.gz"
    write_trace(SCENARIOS["broker-dies"].run(seed=1), trace)
    trace.write_bytes(trace.read_bytes()[:200])

    result = _evaluate(tmp_path, str(trace))

    assert result.returncode == 2
    assert result.stderr.startswith(f"routewatch: the trace {trace} is not a whole gz file (")
    assert result.stderr.endswith("): copy it again, or give it uncompressed.\n")
    assert result.stderr.count("\n") == 1


def test_evaluate_reads_a_spool_as_one_stream(tmp_path: Path) -> None:
    # one trace written as a spool is, in three files: alone, each misses the others' events
    spool = tmp_path / "spool"
    spool.mkdir()
    events = SCENARIOS["broker-dies"].run(seed=1)
    third = len(events) // 3
    for i, part in enumerate((events[:third], events[third : 2 * third], events[2 * third :])):
        path = spool / f"part-{2 - i}.jsonl"  # names in the reverse order: time decides
        write_trace(part, path)
        os.utime(path, ns=(1_000_000_000 * (i + 1),) * 2)

    result = _evaluate(tmp_path, "--one-stream", str(spool), "--json")

    assert result.returncode == 0, result.stderr[-2000:]
    out = orjson.loads(result.stdout)
    assert list(out) == ["stream"]
    assert sorted(shape(a) for a in out["stream"]) == expected("broker-dies")
