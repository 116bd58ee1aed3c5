"""Every command in an alert's remedy runs when pasted into a shell: each scenario's alerts,
with its NameServers and with a second NameServer added, through ``bash -c`` with a stub
``mqadmin`` that records its arguments. (``shlex.split`` would read ``-n a;b`` as one word and
pass a remedy that a shell splits in two.)"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import orjson
import pytest

from emitter.scenarios import SCENARIOS
from routewatch.alerts import Alert
from streaming.engine.runner import run_stream
from tests.support.traces import Arrival, arrivals

COMMAND = re.compile(r"`([^`]+)`")
SECOND = "10.0.0.199:9876"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with an ``mqadmin`` and a ``routewatch`` that append their name and
    arguments, as JSON, to ``calls``."""
    bin_dir = tmp_path_factory.mktemp("bin")
    for name in ("mqadmin", "routewatch"):
        script = bin_dir / name
        script.write_text(
            "#!/usr/bin/env python3\n"
            "import json, os, sys\n"
            "with open(os.environ['MQADMIN_CALLS'], 'a') as f:\n"
            "    f.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + '\\n')\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _on_two_namesrvs(trace: list[Arrival]) -> list[Arrival]:
    """Every registration also reaching a second NameServer, a millisecond later."""
    out = []
    for event_id, ts, seq, raw in trace:
        out.append((event_id, ts, seq, raw))
        event = orjson.loads(raw)
        if event["type"] == "heartbeat" and event["namesrv"] != SECOND:
            copy = {**event, "namesrv": SECOND, "event_id": f"{event_id}-2", "ts": ts + 1}
            out.append((copy["event_id"], ts + 1, seq, orjson.dumps(copy).decode()))
    return sorted(out, key=lambda a: (a[1], a[2] or 0))


def _namesrvs(trace: list[Arrival]) -> str:
    found = {orjson.loads(raw).get("namesrv") for _, _, _, raw in trace}
    return ";".join(sorted(ns for ns in found if isinstance(ns, str)))


def _alerts(name: str, *, two: bool) -> tuple[list[Alert], str]:
    """The scenario's final alerts (``two``: with a second NameServer) and its NameServers."""
    trace = arrivals(name, seed=0)
    if two:
        trace = _on_two_namesrvs(trace)
    return run_stream(trace, lateness_ms=2000).final_alerts(), _namesrvs(trace)


def _stub_env(stub: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Where the stubs write their calls, and the environment that puts them first."""
    calls = tmp_path / "calls"
    return calls, {
        **os.environ,
        "PATH": f"{stub}:{os.environ['PATH']}",
        "MQADMIN_CALLS": str(calls),
    }


@pytest.mark.parametrize("two", [False, True], ids=["as-is", "second-namesrv"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_command_in_a_remedy_runs_as_pasted(
    name: str, two: bool, stub: Path, tmp_path: Path
) -> None:
    alerts, namesrvs = _alerts(name, two=two)
    calls, env = _stub_env(stub, tmp_path)
    for alert in alerts:
        commands = COMMAND.findall(alert.remedy or "")
        # every command is one to paste, between backticks
        assert (alert.remedy or "").count("mqadmin") == "".join(commands).count("mqadmin")
        for command in commands:
            calls.write_text("")
            result = subprocess.run(
                ["bash", "-c", command], env=env, capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, (command, result.stderr)
            ((program, *argv),) = [orjson.loads(line) for line in calls.read_text().splitlines()]
            if program == "routewatch":  # silencing this very alert, by its id
                assert argv == ["silence", alert.id, "--for", "90d"], (command, argv)
                continue
            assert program == "mqadmin", (command, argv)
            flags = dict(zip(argv[1::2], argv[2::2], strict=True))
            assert argv[0] in ("updateTopic", "deleteTopic"), (command, argv)
            assert flags["-n"] == namesrvs and flags["-t"] == alert.topic, (command, argv)
            assert ("-c" in flags) != ("-b" in flags), (command, argv)
            if argv[0] == "deleteTopic":  # (STALE_ROUTE's: retire the topic everywhere)
                assert set(flags) == {"-n", "-c", "-t"}, (command, argv)
            if "-r" in flags:
                assert flags["-r"] == flags["-w"] and flags["-r"].isdigit(), (command, argv)


def test_the_scenarios_give_every_remedy_that_holds_a_command() -> None:
    kinds = {
        a.kind
        for name in SCENARIOS
        for a in run_stream(arrivals(name, seed=0), lateness_ms=2000).final_alerts()
        if COMMAND.search(a.remedy or "")
    }
    assert kinds == {
        "PARTIAL_COVERAGE",
        "AT_RISK",
        "QUEUE_SKEW",
        "NO_ROUTE_INFO",
        "SEND_REJECTED",
        "STALE_ROUTE",
    }


@pytest.mark.parametrize("two", [False, True], ids=["as-is", "second-namesrv"])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_action_of_every_plan_runs_as_pasted(
    name: str, two: bool, stub: Path, tmp_path: Path
) -> None:
    """The shell form of each action of each plan (and its alternative): the same request
    as the action's fields say, to the same broker, with the cluster's NameServers."""
    alerts, namesrvs = _alerts(name, two=two)
    calls, env = _stub_env(stub, tmp_path)
    for alert in alerts:
        plan = alert.plan
        assert plan is not None, alert.kind  # every kind has one
        steps = plan["steps"] + (plan["alternative"] or {"steps": []})["steps"]
        # the cluster's NameServers (none once no broker has registered for 120 s: then the
        # plan has no action, only a manual step)
        if any(s["type"] == "action" for s in steps):
            assert ";".join(plan["namesrvs"]) == namesrvs
        else:
            assert set(plan["namesrvs"]) <= set(namesrvs.split(";"))
        for step in steps:
            if step["type"] == "manual":
                assert step["do"] and step["check"]["says"], step
                continue
            if step["op"] == "delete_route":
                assert step["shell"] is None and step["loses"], step
                continue
            calls.write_text("")
            result = subprocess.run(
                ["bash", "-c", step["shell"]], env=env, capture_output=True, text=True, check=False
            )
            assert result.returncode == 0, (step["shell"], result.stderr)
            argvs = [orjson.loads(line)[1:] for line in calls.read_text().splitlines()]
            topic_calls = [a for a in argvs if a[0] == "updateTopic"]
            ((argv),) = topic_calls
            flags = dict(zip(argv[1::2], argv[2::2], strict=True))
            assert flags == {
                "-n": namesrvs,
                "-b": step["addr"],
                "-t": step["topic"],
                "-r": str(step["read_queues"]),
                "-w": str(step["write_queues"]),
                "-p": str(step["perm"]),
            }, step
            if step["op"] == "restore_template":  # the setting off before, back after
                assert [a[0] for a in argvs] == [
                    "updateBrokerConfig",
                    "updateTopic",
                    "updateBrokerConfig",
                ]
                assert [a[-1] for a in (argvs[0], argvs[2])] == ["false", "true"]


def test_the_scenarios_give_a_plan_with_actions_for_every_kind_routewatch_can_act_on() -> None:
    kinds = {
        a.kind
        for name in SCENARIOS
        for a in run_stream(arrivals(name, seed=0), lateness_ms=2000).final_alerts()
        if a.plan and any(s["type"] == "action" for s in a.plan["steps"])
    }
    assert kinds == {
        "PARTIAL_COVERAGE",
        "AT_RISK",
        "QUEUE_SKEW",
        "NO_ROUTE_INFO",
        "SEND_REJECTED",
        "STALE_ROUTE",
        "TEMPLATE_MISSING",
    }
