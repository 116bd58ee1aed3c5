"""``routewatch demo`` runs the job, the API and the replay; the API lists the scenario's alerts
within 3 minutes, the demo prints every alert change the store records, and Ctrl-C stops every
process it started."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from routewatch.store import open_store
from routewatch.testing.processes import (
    free_port,
    group_alive,
    pid_alive,
    start_routewatch,
    stop,
    wait_for,
)
from tests.support.traces import expected, shape

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_demo_lists_the_alerts_within_3_minutes_and_stops_everything_on_ctrl_c(
    tmp_path: Path,
) -> None:
    port = free_port()
    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path)}
    demo = start_routewatch(
        ["demo", "--port", str(port)], env, tmp_path / "demo.out", new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def listed() -> bool:
            assert demo.poll() is None, (tmp_path / "demo.out").read_text()
            try:
                body = httpx.get(f"{url}/alerts", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                return False
            return sorted(shape(a) for a in body.get("data", [])) == expected("demo-mixed")

        wait_for(listed, 180, "the API listing demo-mixed's alerts", interval=1)

        def printed_every_change() -> bool:
            store = open_store(f"sqlite:///{tmp_path / 'demo' / 'routewatch.db'}", readonly=True)
            try:
                log = store.alert_log()
            finally:
                store.close()
            lines = [line.split()[:3] for line in (tmp_path / "demo.out").read_text().splitlines()]
            return all(
                [e["change"], e["alert"]["severity"], e["alert"]["kind"]] in lines
                for e in log
                if e["change"] != "updated"
            )

        # AT_RISK opens and resolves within a second or two: both are printed
        wait_for(printed_every_change, 30, "the demo printing every alert opened and resolved")
        text = (tmp_path / "demo.out").read_text()
        assert "  opened   warning  AT_RISK" in text and "  resolved warning  AT_RISK" in text
        # the hint lists all alerts, as the README says: four, one of them resolved
        assert f"curl -s '{url}/alerts'" in text and f"{url}/metrics" in text
        assert "opened_at and resolved_at are event time" in text  # and detected_at wall clock
        pids = [
            int(line.split("(PID ")[1].split(")")[0])
            for line in text.splitlines()
            if "started (PID " in line
        ]
        assert len(pids) == 2  # the stream job and the API

        os.killpg(demo.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
        assert demo.wait(120) == 0
        # the demo, its children and theirs (Spark's JVM, Python workers): all gone
        wait_for(lambda: not group_alive(demo.pid), 60, "every process of the demo ending")
    finally:
        stop(demo)
    text = (tmp_path / "demo.out").read_text()
    assert "==> stopped stream (PID" in text and "api (PID" in text and "replay (PID" in text
    assert not any(pid_alive(pid) for pid in pids)
