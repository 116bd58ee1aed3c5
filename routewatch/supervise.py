"""Running routewatch's own commands as child processes of one command (``routewatch demo``,
``routewatch watch``): each child's output in a log file of its own, what to do when one exits
(fail, restart it, or let it end), one stop for all by their PIDs; and the store's alert log
followed and printed line by line (:class:`routewatch.terminal.AlertChanges`, the printer
``stream`` uses too).

The core imports none of the commands' packages: a child is ``python -m routewatch.cli ARGV``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Literal

from routewatch.errors import RoutewatchError
from routewatch.store import StoreError, open_store
from routewatch.terminal import AlertChanges, alert_line

__all__ = ["AlertLogFollower", "Child", "Children", "api_up", "signals_set_a_flag"]

OnExit = Literal["fail", "restart", "end"]
# a child restarted this many times within RESTART_WINDOW_S is given up on: it fails at start
RESTART_LIMIT = 5
RESTART_WINDOW_S = 600.0
# how long a child restarted at once waits before the next restart, doubling to the most
RESTART_BACKOFF_S = (1.0, 30.0)


@dataclass
class Child:
    """One child: its name, command line, what to do when it exits, the running process."""

    name: str
    argv: list[str]
    env: dict[str, str]
    on_exit: OnExit
    proc: subprocess.Popen[bytes]
    restarts: list[float] = field(default_factory=list)  # when it was restarted (monotonic)
    restart_at: float | None = None  # when it is due to restart, while it is down

    @property
    def pid(self) -> int:
        return self.proc.pid


@dataclass
class Children:
    """The processes one command started, each logging to ``<logs>/<name>.log`` (appended to
    across restarts), stopped together by their PIDs."""

    logs: Path
    say: Callable[[str], None] = print
    # a child restarted ``limit`` times within ``window_s`` is given up on; the pause before a
    # restart starts at ``backoff_s[0]`` and doubles, to ``backoff_s[1]`` at most
    limit: int = RESTART_LIMIT
    window_s: float = RESTART_WINDOW_S
    backoff_s: tuple[float, float] = RESTART_BACKOFF_S
    started: list[Child] = field(default_factory=list)
    _files: list[IO[bytes]] = field(default_factory=list)

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        out = self.log(name).open("ab")
        self._files.append(out)
        return subprocess.Popen(
            [sys.executable, "-m", "routewatch.cli", *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def start(
        self, name: str, argv: list[str], env: dict[str, str], on_exit: OnExit = "fail"
    ) -> Child:
        """Start ``routewatch ARGV`` as the child ``name``; ``on_exit`` says what :meth:`check`
        does when it exits on its own: ``fail`` (the command stops, naming its log),
        ``restart`` (started again, and said), or ``end`` (a child that finishes)."""
        self.log(name).write_bytes(b"")
        child = Child(name, argv, env, on_exit, self._spawn(name, argv, env))
        self.started.append(child)
        return child

    def child(self, name: str) -> Child:
        return next(c for c in self.started if c.name == name)

    def _tail(self, name: str) -> str:
        return self.log(name).read_text(errors="replace")[-1500:]

    def check(self) -> None:
        """Act on every child that exited on its own since the last look: restart those to be
        restarted (saying so; after a growing pause if one keeps exiting), and fail with one
        sentence for one that must not exit, or one restarted ``limit`` times within
        ``window_s`` that exits again."""
        now = time.monotonic()
        for child in self.started:
            status = child.proc.poll()
            if status is None or child.on_exit == "end":
                continue
            where = f"its log is {self.log(child.name)}"
            if child.on_exit == "fail":
                print(self._tail(child.name), file=sys.stderr)
                raise RoutewatchError(
                    f"the {child.name} process exited with status {status} ({where}, its end "
                    "above); fix what it names and start again."
                )
            if child.restart_at is None:
                recent = [t for t in child.restarts if now - t < self.window_s]
                if len(recent) >= self.limit:
                    print(self._tail(child.name), file=sys.stderr)
                    raise RoutewatchError(
                        f"the {child.name} process exited {len(recent) + 1} times in "
                        f"{self.window_s / 60:g} minutes, last with status {status} "
                        f"({where}, its end above); fix what it names and start again."
                    )
                first, most = self.backoff_s
                pause = min(first * 2 ** len(recent), most)
                child.restart_at = now + pause
                self.say(
                    f"==> {child.name} (PID {child.pid}) exited with status {status}; restarting "
                    f"it in {pause:g} s ({where})"
                )
            if now >= child.restart_at:
                child.restart_at = None
                child.restarts.append(now)
                child.proc = self._spawn(child.name, child.argv, child.env)
                self.say(f"==> {child.name} restarted (PID {child.pid})")

    def wait_for_api(self, url: str, stopping: list[int], startup_s: float) -> bool:
        """Wait until the API at ``url`` answers, acting on the children meanwhile
        (:meth:`check`); False when a signal came first, one sentence after ``startup_s``."""
        deadline = time.monotonic() + startup_s
        while not stopping and not api_up(url):
            self.check()
            if time.monotonic() > deadline:
                raise RoutewatchError(
                    f"the API did not answer on {url} within {startup_s:.0f} s: see "
                    f"{self.log('api')}, or pick a free port with --port."
                )
            time.sleep(0.2)
        return not stopping

    def follow(
        self,
        follower: AlertLogFollower,
        stopping: list[int],
        status_every_s: float,
        each_round: Callable[[], None] = lambda: None,
    ) -> None:
        """Until a signal: act on the children, print each alert change the follower reads, a
        count of open and resolved alerts every ``status_every_s``, and run ``each_round``."""
        last_status = time.monotonic()
        while not stopping:
            self.check()
            due = time.monotonic() - last_status > status_every_s
            for line in follower.poll(count=due):
                self.say(line)
            each_round()
            if due:
                last_status = time.monotonic()
                states = follower.states
                self.say(
                    f"    [{states.get('open', 0)} alert(s) open, "
                    f"{states.get('resolved', 0)} resolved]"
                )
            time.sleep(0.5)

    def stop(self, grace_s: float = 60.0) -> str:
        """SIGTERM every child at once, wait for all against one deadline, SIGKILL what is left;
        says which were stopped."""
        for child in self.started:
            if child.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for child in self.started:
            try:
                child.proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait(10)
        for f in self._files:
            f.close()
        return ", ".join(f"{c.name} (PID {c.pid})" for c in self.started)


def api_up(url: str) -> bool:
    """True once the API at ``url`` answers ``/healthz``."""
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def signals_set_a_flag() -> Iterator[list[int]]:
    """Ctrl-C and SIGTERM only append to the list yielded, from the start to the end (stopping
    included): every loop looks at it, and a second signal cannot cut a stop short and leave
    children behind."""
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass
class AlertLogFollower:
    """The store's alert log followed from its start: :meth:`poll` gives the lines of the entries
    written since the last poll (every alert opened and resolved, and an update that changes its
    line), and on request the counts of open and resolved alerts (``states``). A store not
    created yet, or busy, gives nothing until the next poll."""

    store_url: str
    changes: AlertChanges = field(default_factory=AlertChanges)
    states: dict[str, int] = field(default_factory=dict)

    def skip_to_end(self) -> list[str]:
        """Follow from the log's end (a store that has a history: a restarted watch), and the
        lines of the alerts open now, each as ``open``."""
        try:
            store = open_store(self.store_url, readonly=True)
        except StoreError:
            return []
        try:
            while entries := store.alert_log(after=self.changes.after):
                self.changes.after = max(e["seq"] for e in entries)
            return [alert_line("open", a) for a in store.alerts(state="open")]
        except StoreError:
            return []
        finally:
            store.close()

    def poll(self, *, count: bool = False) -> list[str]:
        """The lines of the entries written since the last poll; with ``count``, ``states``
        counted again too."""
        try:
            store = open_store(self.store_url, readonly=True)
        except StoreError:
            return []
        lines: list[str] = []
        try:
            while True:
                entries = store.alert_log(after=self.changes.after)
                lines += self.changes.lines(entries)
                if not entries:
                    break
            if count:
                alerts = store.alerts()
                self.states = {
                    state: sum(1 for a in alerts if a["state"] == state)
                    for state in ("open", "resolved")
                }
        except StoreError:
            pass  # not migrated yet, or busy: the next poll
        finally:
            store.close()
        return lines
