"""The children of ``watch`` and ``demo`` (:mod:`routewatch.supervise`): a child to be restarted
is started again after a growing pause and said so, one that keeps exiting stops the whole with
one sentence, one that must not exit fails at once, one that ends is left ended; and the alert
log's follower prints each change once, from where it was asked to start. Real child processes
(``routewatch`` commands that exit at once) and a real store; no Spark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from routewatch.alerts import Alert, AlertState
from routewatch.changes import encode_alert
from routewatch.errors import RoutewatchError
from routewatch.store import open_store
from routewatch.supervise import AlertLogFollower, Children, api_up
from routewatch.testing.processes import free_port, pid_alive, wait_for

# `routewatch collect` with nothing to collect exits at once with status 2 and one sentence
EXITS = ["collect", "--to", "stdout"]
ENV = {"PATH": "/usr/bin:/bin"}


def _env(tmp_path: Path) -> dict[str, str]:
    return {**ENV, "ROUTEWATCH_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)}


def test_a_child_that_exits_is_restarted_after_a_growing_pause_and_said_so(
    tmp_path: Path,
) -> None:
    said: list[str] = []
    children = Children(tmp_path, say=said.append, limit=3, window_s=60, backoff_s=(0.2, 0.4))
    child = children.start("collect", EXITS, _env(tmp_path), on_exit="restart")
    first = child.pid

    def restarted(times: int) -> bool:
        children.check()
        return len(child.restarts) >= times

    wait_for(lambda: restarted(2), 30, "two restarts")
    assert child.pid != first
    assert said[0] == (
        f"==> collect (PID {first}) exited with status 2; restarting it in 0.2 s (its log is "
        f"{tmp_path / 'collect.log'})"
    )
    assert re.fullmatch(r"==> collect restarted \(PID \d+\)", said[1])
    assert "restarting it in 0.4 s" in said[2]  # doubled, and no more than the most
    # every run's output is kept, one after another
    wait_for(
        lambda: (tmp_path / "collect.log").read_text().count("nothing to collect") >= 2,
        30,
        "two runs' output in the log",
    )

    with pytest.raises(RoutewatchError) as failed:
        wait_for(lambda: restarted(99), 30, "the restarts given up")
    assert str(failed.value).startswith("the collect process exited 4 times in 1 minutes")
    assert str(failed.value).endswith("fix what it names and start again.")
    children.stop()


def test_a_child_that_must_not_exit_fails_and_one_that_ends_is_left(tmp_path: Path) -> None:
    children = Children(tmp_path, say=lambda line: None)
    ends = children.start("once", EXITS, _env(tmp_path), on_exit="end")
    wait_for(lambda: ends.proc.poll() is not None, 30, "the child ending")
    children.check()  # nothing to do
    fails = children.start("collect", EXITS, _env(tmp_path), on_exit="fail")
    wait_for(lambda: fails.proc.poll() is not None, 30, "the child exiting")
    with pytest.raises(RoutewatchError, match=r"^the collect process exited with status 2 "):
        children.check()
    assert children.stop() == f"once (PID {ends.pid}), collect (PID {fails.pid})"


def test_stop_ends_every_child_by_its_pid(tmp_path: Path) -> None:
    children = Children(tmp_path, say=lambda line: None)
    port = free_port()  # `routewatch api` serves until SIGTERM
    env = {**_env(tmp_path), "ROUTEWATCH_API_PORT": str(port)}
    child = children.start("api", ["api"], env)
    wait_for(lambda: api_up(f"http://127.0.0.1:{port}"), 60, "the API answering")
    assert children.stop(grace_s=30) == f"api (PID {child.pid})"
    assert child.proc.returncode is not None and not pid_alive(child.pid)


def _alert(topic: str, state: AlertState = "open", at: int = 1_000) -> Alert:
    return Alert(
        id=f"partial_coverage-{topic}",
        kind="PARTIAL_COVERAGE",
        severity="critical",
        state=state,
        cluster="c",
        topic=topic,
        broker=None,
        broker_id=None,
        cause=None,
        opened_at=1_000,
        updated_at=at,
        resolved_at=at if state == "resolved" else None,
        summary=f"{topic} {state}",
        evidence={},
        remedy=None,
        plan=None,
    )


def test_the_follower_prints_each_change_once_and_can_start_at_the_end(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'rw.db'}"
    follower = AlertLogFollower(url)
    assert follower.poll() == []  # no store yet
    store = open_store(url)
    store.write_batch("job", 0, [encode_alert(_alert("A"), 0), encode_alert(_alert("B"), 1)])
    lines = follower.poll(count=True)
    assert [line.split()[:4] for line in lines] == [
        ["opened", "critical", "PARTIAL_COVERAGE", "c/A"],
        ["opened", "critical", "PARTIAL_COVERAGE", "c/B"],
    ]
    assert follower.states == {"open": 2, "resolved": 0}
    assert follower.poll() == []
    store.write_batch("job", 1, [encode_alert(_alert("A", "resolved", 2_000), 0)])
    assert [line.split()[:4] for line in follower.poll()] == [
        ["resolved", "critical", "PARTIAL_COVERAGE", "c/A"]
    ]
    # a new follower (a restarted watch) starts at the log's end, with what is open now
    late = AlertLogFollower(url)
    assert [line.split()[:4] for line in late.skip_to_end()] == [
        ["open", "critical", "PARTIAL_COVERAGE", "c/B"]
    ]
    assert late.poll() == []
    store.close()
