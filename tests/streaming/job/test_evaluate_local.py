"""``routewatch evaluate`` with its default engine, local (the job's step in this process): in
seconds, each bad line named by file and line, remedies in its text, one alert per line with
--jsonl. (That it gives the Spark job's alerts: test_evaluate_engines.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

from emitter.scenarios import SCENARIOS
from streaming.job.evaluate import BAD_LINES_NAMED
from tests.support.traces import expected, shape, write_trace


def _evaluate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "evaluate", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data")},
        check=False,
        timeout=120,
    )


def test_a_40_event_trace_is_evaluated_in_a_few_seconds(tmp_path: Path) -> None:
    name = "namesrv-registration-lost"
    trace = tmp_path / "trace.jsonl"
    assert write_trace(SCENARIOS[name].run(seed=1), trace) == 40

    started = time.monotonic()
    result = _evaluate(tmp_path, str(trace), "--json")
    took = time.monotonic() - started

    assert result.returncode == 0, result.stderr
    assert sorted(shape(a) for a in orjson.loads(result.stdout)[str(trace)]) == expected(name)
    assert result.stderr == "routewatch evaluate: engine local: the job's step in this process\n"
    assert took <= 5.0, f"{took:.1f} s"


def test_the_text_output_names_the_engine_each_bad_line_and_each_alerts_remedy(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(SCENARIOS["broker-dies"].run(seed=1), trace)
    lines = trace.read_text().splitlines()
    bad = ['{"v": 1, "type": "heartbeat"}', "not json", *["{}"] * BAD_LINES_NAMED]
    trace.write_text("\n".join([lines[0], *bad, *lines[1:]]) + "\n")

    result = _evaluate(tmp_path, str(trace))

    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "routewatch evaluate (engine local: the job's step in this process)"
    assert out[1].startswith(f"{trace}: 2 alert(s), from 102 event(s), 22 line(s) of bad input (")
    assert out[2] == f"  bad input: {trace}, line 2: heartbeat.ts is missing"
    assert out[3].startswith(f"  bad input: {trace}, line 3: the input is not JSON: ")
    assert out[2 + BAD_LINES_NAMED] == "  bad input: 2 more line(s)"
    alerts = out[3 + BAD_LINES_NAMED :]
    assert [line.split()[:3] for line in alerts[::2]] == [
        ["open", "critical", "PARTIAL_COVERAGE"],
        ["open", "critical", "BROKER_EXPIRED"],
    ]
    assert all(line.startswith("      remedy: ") for line in alerts[1::2])
    assert "2026-01-01T00:02:40.000Z" in alerts[2]  # event time, ISO 8601 with its zone


def test_jsonl_prints_one_alert_per_line_with_its_trace(tmp_path: Path) -> None:
    traces = []
    for name in ("broker-dies", "queue-skew"):
        traces.append(tmp_path / f"{name}.jsonl")
        write_trace(SCENARIOS[name].run(seed=1), traces[-1])

    result = _evaluate(tmp_path, *map(str, traces), "--jsonl")

    assert result.returncode == 0, result.stderr
    alerts = [orjson.loads(line) for line in result.stdout.splitlines()]
    for name, trace in zip(("broker-dies", "queue-skew"), traces, strict=True):
        assert sorted(shape(a) for a in alerts if a["trace"] == str(trace)) == expected(name)
