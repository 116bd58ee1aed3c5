"""``routewatch alerts``: the alerts of a store and of a running API, one line each with ISO 8601
times, filtered, as JSON; ``--follow`` printing the alert log's changes as the job writes them,
from the store and over the API's live stream."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from emitter.scenarios import SCENARIOS
from routewatch.codec import encode
from routewatch.settings import load
from routewatch.testing.processes import free_port, start_routewatch, stop, wait_for
from streaming.settings import StreamingSettings
from tests.support.stores import EngineJob

ISO = "2026-"  # the scenario's event times, as the terminal writes them (2026-...Z)


def _env(data: Path) -> dict[str, str]:
    return {**os.environ, "ROUTEWATCH_DATA_DIR": str(data)}


def _alerts(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "alerts", *args],
        env=_env(data),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.fixture
def api(store_dir: Path, tmp_path: Path) -> Iterator[str]:
    """``routewatch api`` over the demo scenario's store."""
    port = free_port()
    env = _env(store_dir) | {"ROUTEWATCH_API_PORT": str(port)}
    proc = start_routewatch(["api"], env, tmp_path / "api.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is None and _up(url), 60, "the API")
        yield url
    finally:
        stop(proc)


def test_the_stores_alerts_one_line_each_with_iso_times(store_dir: Path) -> None:
    result = _alerts(store_dir)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # the demo scenario ends with four alerts: AT_RISK resolved, three open
    assert sorted((line.split()[0], line.split()[2]) for line in lines) == [
        ("open", "BROKER_EXPIRED"),
        ("open", "NO_ROUTE_INFO"),
        ("open", "PARTIAL_COVERAGE"),
        ("resolved", "AT_RISK"),
    ]
    assert all(line.split()[4].startswith(ISO) and line.split()[4].endswith("Z") for line in lines)


def test_filters_and_json(store_dir: Path) -> None:
    open_ = _alerts(store_dir, "--state", "open", "-o", "json")
    kind = _alerts(store_dir, "--kind", "AT_RISK", "-o", "wide")

    assert open_.returncode == kind.returncode == 0
    alerts = orjson.loads(open_.stdout)
    assert len(alerts) == 3 and {a["state"] for a in alerts} == {"open"}
    assert all(isinstance(a["opened_at"], int) for a in alerts)  # epoch ms in JSON only
    wide = kind.stdout.splitlines()
    assert wide[0].split()[:3] == ["resolved", "warning", "AT_RISK"]
    assert wide[1].startswith("      id at_risk-") and "resolved 2026-" in wide[1]
    assert wide[2].startswith("      remedy: `mqadmin updateTopic ")


def test_a_running_apis_alerts_are_the_stores(store_dir: Path, api: str) -> None:
    from_store = _alerts(store_dir, "-o", "json")
    from_api = _alerts(store_dir, "--api", api, "-o", "json")

    assert from_api.returncode == 0, from_api.stderr
    fields = ("id", "kind", "state", "opened_at", "resolved_at", "summary", "evidence", "remedy")
    api_alerts, store_alerts = orjson.loads(from_api.stdout), orjson.loads(from_store.stdout)
    assert [[a[f] for f in fields] for a in api_alerts] == [
        [a[f] for f in fields] for a in store_alerts
    ]
    assert _alerts(store_dir, "--api", api).stdout == _alerts(store_dir).stdout


def test_an_api_not_there_is_one_sentence(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"

    result = _alerts(tmp_path, "--api", url)

    assert result.returncode == 2
    assert result.stderr.startswith(f"routewatch: cannot reach the API at {url}/alerts?")
    assert result.stderr.endswith("is routewatch api running there?\n")


@pytest.mark.parametrize("via", ["store", "api"])
def test_follow_prints_each_change_as_the_job_writes_it(tmp_path: Path, via: str) -> None:
    data = tmp_path / "data"
    settings = load(StreamingSettings, data_dir=data)
    job = EngineJob(settings)
    lines = [encode(e).decode() for e in SCENARIOS["broker-dies"].run(seed=1)]
    job.write(lines[:10])  # the store exists before the follower starts
    argv = ["alerts", "--follow"]
    procs = []
    if via == "api":
        port = free_port()
        api = start_routewatch(
            ["api"], _env(data) | {"ROUTEWATCH_API_PORT": str(port)}, tmp_path / "api.log"
        )
        procs.append(api)
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _up(url), 60, "the API")
        argv += ["--api", url]
    follower = start_routewatch(argv, _env(data), tmp_path / "follow.log")
    procs.append(follower)
    try:
        for start in range(10, len(lines), 10):
            job.write(lines[start : start + 10])

        def followed() -> list[list[str]]:
            text = (tmp_path / "follow.log").read_text()
            return [line.split()[:3] for line in text.splitlines() if line.startswith("  ")]

        wait_for(lambda: ["opened", "critical", "BROKER_EXPIRED"] in followed(), 60, "the opening")
        assert ["opened", "critical", "PARTIAL_COVERAGE"] in followed()
        assert follower.poll() is None  # it follows until stopped
    finally:
        for proc in procs:
            stop(proc)


def _silence(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "routewatch.cli", "silence", *args],
        env=_env(data) | env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_routewatch_silence_silences_one_alert_for_alertmanager_and_lifts_it(
    store_dir: Path, tmp_path: Path
) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(store_dir, data)
    listed = orjson.loads(_alerts(data, "--state", "open", "-o", "json").stdout)
    target = listed[0]["id"]

    done = _silence(data, target, "--for", "30d")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"Silenced {target} until 20")
    after = {a["id"]: a for a in orjson.loads(_alerts(data, "-o", "json").stdout)}
    assert sum(1 for a in after.values() if a.get("silenced_until")) == 1

    lifted = _silence(data, target, "--lift")
    assert lifted.returncode == 0 and lifted.stdout == f"Lifted the silence of {target}.\n"

    # one sentence for what is wrong
    unknown = _silence(data, "no-such-alert", "--for", "1h")
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("routewatch: there is no alert with id no-such-alert")
    bad = _silence(data, target, "--for", "soon")
    assert bad.returncode == 2 and "'soon' is not a duration" in bad.stderr
    no_token = _silence(data, target, "--for", "1h", "--api", "http://127.0.0.1:1")
    assert no_token.returncode == 2
    assert "set ROUTEWATCH_API_TOKEN" in no_token.stderr


def test_routewatch_silence_through_the_api_for_alertmanager(
    store_dir: Path, tmp_path: Path
) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(store_dir, data)
    target = orjson.loads(_alerts(data, "--state", "open", "-o", "json").stdout)[0]["id"]
    port = free_port()
    token = {"ROUTEWATCH_API_TOKEN": "tok"}
    env = _env(data) | {"ROUTEWATCH_API_PORT": str(port)} | token
    proc = start_routewatch(["api"], env, tmp_path / "api.log")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is None and _up(url), 60, "the API")
        wrong = _silence(data, target, "--for", "1h", "--api", url, ROUTEWATCH_API_TOKEN="x")
        assert wrong.returncode == 2 and "the API refused the silence (401)" in wrong.stderr
        done = _silence(data, target, "--for", "1h", "--api", url, **token)
        assert done.returncode == 0, done.stderr
        with urllib.request.urlopen(f"{url}/alerts/{target}", timeout=10) as response:
            (silence,) = orjson.loads(response.read())["silenced_by"]
        assert silence["source"] == "routewatch"
    finally:
        stop(proc)
