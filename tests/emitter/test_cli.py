"""``routewatch simulate`` as a person runs it."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from emitter.scenarios import SCENARIOS
from emitter.versions import ROCKETMQ_5
from routewatch.codec import encode
from routewatch.validation import validate


def _routewatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", *args], capture_output=True, text=True, check=False
    )


def test_list_prints_every_scenario_one_per_line_its_name_then_what_it_does() -> None:
    result = _routewatch("simulate", "--list")

    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)  # no header line
    for line, scenario in zip(lines, SCENARIOS.values(), strict=True):
        assert line.endswith("  " + scenario.summary) and scenario.summary


def test_a_scenario_is_written_as_gzipped_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "traces" / "one.jsonl.gz"

    result = _routewatch("simulate", "--scenario", "broker-dies", "--seed", "4", "--out", str(out))

    assert result.returncode == 0, result.stderr
    lines = gzip.decompress(out.read_bytes()).splitlines()
    assert lines == [encode(e) for e in SCENARIOS["broker-dies"].run(seed=4)]
    assert f"wrote {len(lines)} events to {out}" in result.stderr
    assert [p.name for p in out.parent.iterdir()] == ["one.jsonl.gz"]


def test_rocketmq_5_runs_the_scenario_under_the_5x_behaviour(tmp_path: Path) -> None:
    out = tmp_path / "five.jsonl"

    result = _routewatch(
        "simulate", "--scenario", "one-send-then-silence", "--rocketmq", "5", "--out", str(out)
    )

    assert result.returncode == 0, result.stderr
    lines = out.read_bytes().splitlines()
    five = SCENARIOS["one-send-then-silence"].run(version=ROCKETMQ_5)
    assert lines == [encode(e) for e in five]
    # the auto-created topic is registered alone (5.x), not with the whole table (4.9)
    increments = [orjson.loads(line) for line in lines if b'"full":false' in line]
    assert [sorted(e["topics"]) for e in increments] == [["TopicA"]]
    assert lines != [encode(e) for e in SCENARIOS["one-send-then-silence"].run()]


def test_an_unknown_rocketmq_line_is_refused_by_the_parser(tmp_path: Path) -> None:
    result = _routewatch("simulate", "--scenario", "broker-dies", "--rocketmq", "6", "--out", "x")

    assert result.returncode == 2
    assert "invalid choice: '6' (choose from '4.9', '5')" in result.stderr


def test_a_fleet_is_written_as_json_lines(tmp_path: Path) -> None:
    out = tmp_path / "fleet.jsonl"

    result = _routewatch(
        "simulate",
        "--fleet",
        "--clusters",
        "1",
        "--brokers",
        "2",
        "--topics",
        "10",
        "--producers",
        "2",
        "--send-rate",
        "20",
        "--duration",
        "3",
        "--out",
        str(out),
    )

    assert result.returncode == 0, result.stderr
    events = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert all(validate(e) is None for e in events)
    assert sum(1 for e in events if e["type"] == "send") == 60
    # a word on the size before it writes, then what it wrote
    said, wrote = result.stderr.splitlines()
    assert said.startswith("writing about ") and f"events (0 MB) to {out}" in said
    assert wrote.startswith(f"wrote {len(events)} events to {out}")


def test_an_unknown_scenario_is_one_clear_sentence() -> None:
    result = _routewatch("simulate", "--scenario", "nope", "--out", "/tmp/x.jsonl")

    assert result.returncode == 2
    assert result.stderr == (
        "routewatch: there is no scenario named 'nope'; "
        "`routewatch simulate --list` prints their names.\n"
    )


def test_an_unwritable_output_is_one_clear_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")

    result = _routewatch("simulate", "--scenario", "queue-skew", "--out", str(blocker / "t.jsonl"))

    assert result.returncode == 2
    assert result.stderr.startswith(f"routewatch: cannot write the trace {blocker / 't.jsonl'}")
    assert result.stderr.count("\n") == 1


def test_expected_prints_the_alerts_a_correct_monitor_ends_with() -> None:
    result = _routewatch("simulate", "--scenario", "broker-dies", "--expected")

    assert result.returncode == 0, result.stderr
    assert [orjson.loads(line) for line in result.stdout.splitlines()] == [
        {
            "kind": "BROKER_EXPIRED",
            "state": "open",
            "severity": "critical",
            "topic": None,
            "broker": "broker-b",
            "broker_id": 0,
            "cause": None,
            "cluster": "DefaultCluster",
        },
        {
            "kind": "PARTIAL_COVERAGE",
            "state": "open",
            "severity": "critical",
            "topic": "TopicOnlyB",
            "broker": None,
            "broker_id": None,
            "cause": None,
            "cluster": "DefaultCluster",
        },
    ]


@pytest.mark.parametrize(("option", "value"), [("--duration", "-5"), ("--topics", "0")])
def test_a_fleet_option_below_one_is_one_clear_sentence(
    option: str, value: str, tmp_path: Path
) -> None:
    result = _routewatch("simulate", "--fleet", option, value, "--out", str(tmp_path / "t.jsonl"))

    assert result.returncode == 2
    assert result.stderr == f"routewatch: {option} must be at least 1, got {value}.\n"
    assert not (tmp_path / "t.jsonl").exists()
