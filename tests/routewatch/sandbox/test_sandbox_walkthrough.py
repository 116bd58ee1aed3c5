"""The walkthrough of docs/sandbox.md, run as that page writes it (its commands read from its
block, so the two cannot drift), on RocketMQ 5.5 and 4.9: ``routewatch sandbox``, ``routewatch
watch`` on it, one ``sandbox send`` to a new topic, the failures all at once, and each alert the
page names open in the API within the time it gives; then Ctrl-C (SIGINT) stops both and every
process they started.

Only the ports differ from the page (free ones: ``--namesrv-port``, ``--port``), and the
release line (``--version 4.9``, as the page says for 4.9)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import pytest

from routewatch.testing.processes import (
    free_port,
    group_alive,
    pid_alive,
    run_routewatch,
    start_routewatch,
    wait_for,
)
from routewatch.testing.rocketmq import free_broker_port
from tests.support.rocketmq import require_rocketmq

pytestmark = [pytest.mark.rocketmq, pytest.mark.slow]

PAGE = Path(__file__).resolve().parents[3] / "docs" / "sandbox.md"
EXPECT = re.compile(
    r"#\s*->\s*(?P<kind>[A-Z_]+) (?P<subject>\S+)"
    r'(?: "(?P<says>[^"]+)")? within (?P<within>\d+) s\s*$'
)


@dataclass(frozen=True)
class Step:
    argv: list[str]
    # the alert the step brings: kind, topic or broker, what its summary says (if the page
    # says), and the most it takes
    expects: tuple[str, str, str, float] | None


def walkthrough() -> list[Step]:
    """The commands of the page's walkthrough block, in order, each with what it expects."""
    text = PAGE.read_text()
    section = text[text.index("## The walkthrough") :]
    block = section[section.index("```sh\n") + len("```sh\n") :]
    block = block[: block.index("```")]
    steps = []
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = EXPECT.search(line)
        expects = None
        if match:
            expects = (match["kind"], match["subject"], match["says"] or "", float(match["within"]))
            line = line[: match.start()]
        steps.append(Step(shlex.split(line), expects))
    return steps


def test_the_walkthrough_reads_as_a_person_would_type_it() -> None:
    steps = walkthrough()
    assert [s.argv[:3] for s in steps[:3]] == [
        ["routewatch", "sandbox", "--brokers"],
        ["routewatch", "watch", "--namesrv"],
        ["routewatch", "sandbox", "send"],
    ]
    assert steps[-1].argv[0] == "curl"
    kinds = {s.expects[0] for s in steps if s.expects}
    assert kinds == {"PARTIAL_COVERAGE", "BROKER_EXPIRED", "NAMESRV_DIVERGENCE", "TEMPLATE_MISSING"}


def _open_alerts(url: str) -> dict[tuple[str, str], dict[str, object]]:
    try:
        body = httpx.get(f"{url}/alerts", params={"state": "open"}, timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return {}
    return {(a["kind"], a["topic"] or a["broker"]): a for a in body.get("data", [])}


@pytest.mark.parametrize("version", ["5.5", "4.9"])
def test_the_sandbox_walkthrough_as_docs_write_it(version: str, tmp_path: Path) -> None:
    require_rocketmq(int(version[0]))
    first = free_broker_port()  # (and the next one: a port with free neighbours)
    api = free_port()
    addresses = {"9876": str(first), "9877": str(first + 1), "8000": str(api)}

    def localised(argv: list[str]) -> list[str]:
        out = []
        for arg in argv:
            for page, here in addresses.items():
                arg = arg.replace(f"127.0.0.1:{page}", f"127.0.0.1:{here}")
            out.append(arg)
        return out

    env = {**os.environ, "ROUTEWATCH_DATA_DIR": str(tmp_path / "data")}
    steps = walkthrough()
    sandbox_step, watch_step, *rest = steps
    sandbox_argv = [*sandbox_step.argv, "--namesrv-port", str(first)]
    if version == "4.9":
        sandbox_argv += ["--version", "4.9"]
    sandbox_log, watch_log = tmp_path / "sandbox.out", tmp_path / "watch.out"
    sandbox = start_routewatch(sandbox_argv[1:], env, sandbox_log, new_session=True)
    watch: subprocess.Popen[bytes] | None = None
    url = f"http://127.0.0.1:{api}"
    try:

        def sandbox_up() -> bool:
            assert sandbox.poll() is None, sandbox_log.read_text()
            return "Ctrl-C stops the sandbox" in sandbox_log.read_text()

        wait_for(sandbox_up, 240, "the sandbox running", interval=0.5)
        printed = sandbox_log.read_text()
        # it prints the address the page's watch command is written with
        assert f"NameServer address: 127.0.0.1:{first};127.0.0.1:{first + 1}" in printed
        watch_argv = [*localised(watch_step.argv)[1:], "--port", str(api)]
        watch = start_routewatch(watch_argv, env, watch_log, new_session=True)
        pending: list[tuple[str, str, str, float]] = []  # alerts due: what, and by when
        named: set[tuple[str, str]] = set()
        curl_output = b""
        for step in rest:
            argv = localised(step.argv)
            if argv[0] == "routewatch":
                done = run_routewatch(argv[1:], env, timeout=180)
                assert done.returncode == 0, (argv, done.stdout, done.stderr)
            else:  # curl: once every alert named so far is open, as the page says
                for kind, subject, says, deadline in sorted(pending, key=lambda p: p[3]):

                    def shown(key: tuple[str, str] = (kind, subject), says: str = says) -> bool:
                        assert watch is not None and watch.poll() is None, watch_log.read_text()
                        alert = _open_alerts(url).get(key)
                        return alert is not None and says in str(alert["summary"])

                    what = f"{kind} of {subject} open in the API" + (f' ("{says}")' * bool(says))
                    wait_for(shown, max(deadline - time.monotonic(), 0), what, interval=1)
                pending = []
                curl_output = subprocess.run(argv, capture_output=True, check=True).stdout
            if step.expects:
                kind, subject, says, within = step.expects
                pending.append((kind, subject, says, time.monotonic() + within))
                named.add((kind, subject))
        assert pending == [], "the page ends with a curl that lists them"

        # what the page's last curl printed: the alerts it names, and no other
        alerts = {
            (a["kind"], a["topic"] or a["broker"]): a for a in orjson.loads(curl_output)["data"]
        }
        assert set(alerts) == named
        divergence = alerts[("NAMESRV_DIVERGENCE", "broker-a")]["summary"]
        assert divergence.endswith("clients see different routes by NameServer.")
        # watch printed each as it opened, once
        lines = watch_log.read_text().splitlines()
        for kind, subject in named:
            opened = [
                ln
                for ln in lines
                if ln.split()[:1] == ["opened"] and kind in ln and f"/{subject}" in ln
            ]
            assert len(opened) == 1, (kind, subject, lines)
        state = tmp_path / "data" / "sandbox" / "sandbox.json"
        assert state.stat().st_mode & 0o777 == 0o600  # its control key, its owner's alone
        rocketmq = orjson.loads(state.read_bytes())
        assert set(rocketmq["pids"]) == {"ns1", "ns2", "broker-a", "broker-c"}  # broker-b killed
    finally:
        for proc in (watch, sandbox):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C, as in a terminal
        for proc, log in ((watch, watch_log), (sandbox, sandbox_log)):
            if proc is not None:
                proc.wait(120)
                assert proc.returncode == 0, log.read_text()[-3000:]
                # (the job's JVM ends a moment after its driver, on the end of its input)
                group = proc.pid

                def all_gone(group: int = group) -> bool:
                    return not group_alive(group)

                wait_for(all_gone, 30, f"every process of {log.name} gone")
    assert "==> stopped" in sandbox_log.read_text()
    assert [pid for pid in rocketmq["pids"].values() if pid_alive(pid)] == []
    assert "Traceback" not in watch_log.read_text() + sandbox_log.read_text()
