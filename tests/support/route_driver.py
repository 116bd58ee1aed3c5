"""The real RocketMQ Java client (``DefaultMQProducer``) driven by a script, for tests.

``tests/support/java/RouteDriver.java`` is compiled on first use with the JDK's ``javac`` against
the distribution's ``lib/*`` and the client hook library's jar (``emitter/hook``, built with Maven
by :func:`emitter.hook.build.build`) into ``.cache/route-driver/<digest>/`` (ignored by git; a
changed source, jar or distribution gets a new digest; :mod:`routewatch.java` compiles). A
producer may run with the hook library installed (:class:`HookSpec`). It runs either a whole
script (:func:`play`) or one command at a time (:class:`RouteDriver`, a context manager), so
that a test can look at the NameServers between two sends of the same producer. Each send's
outcome is one :class:`SendOutcome`. A producer without a NameServer address looks it up at
``http://127.0.0.1:1/rocketmq/nsaddr`` (a closed loopback port), never at RocketMQ's outside host.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from emitter.hook.build import build as build_hook
from routewatch.java import compile_cached, javac
from routewatch.testing.rocketmq import (
    JAVA17_OPTS,
    QUICK_JIT,
    RocketMQCluster,
    java_env,
    rocketmq_home,
)

SOURCE = Path(__file__).with_name("java") / "RouteDriver.java"
CACHE = Path(__file__).resolve().parents[2] / ".cache" / "route-driver"
MAIN = "RouteDriver"
HEAP = ("-Xmx128m",)

__all__ = [
    "DriverError",
    "HookSpec",
    "ProducerSpec",
    "RouteDriver",
    "SendOutcome",
    "compile_driver",
    "javac",
    "module_driver",
    "play",
]


class DriverError(RuntimeError):
    """The driver could not run a command (it printed an ``error`` line) or exited."""


def compile_driver(home: Path | None = None) -> Path:
    """The directory of the compiled driver for the distribution ``home``, compiled if needed
    (against the client hook library, which is on its class path)."""
    home = home or rocketmq_home()
    return compile_cached([SOURCE], CACHE, f"{MAIN}.class", home, [build_hook()])


def _command(
    home: Path, workdir: Path, classpath: Iterable[Path], system_properties: Mapping[str, str]
) -> list[str]:
    java = shutil.which("java") or "java"
    entries = [
        str(compile_driver(home)),
        str(build_hook()),
        str(home / "lib" / "*"),
        *map(str, classpath),
    ]
    return [
        java,
        *HEAP,
        *JAVA17_OPTS,
        QUICK_JIT,
        f"-Duser.home={workdir}",
        *(f"-D{k}={v}" for k, v in system_properties.items()),
        "-cp",
        os.pathsep.join(entries),
        MAIN,
    ]


@dataclass(frozen=True)
class HookSpec:
    """The client hook library installed in a producer (docs/hook.md): the producer is a
    ``RoutewatchProducer`` writing its events into ``spool_dir`` for ``cluster``."""

    spool_dir: Path
    cluster: str
    queue_capacity: int | None = None
    roll_events: int | None = None
    roll_interval_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        fields = {
            "spoolDir": str(self.spool_dir),
            "cluster": self.cluster,
            "queueCapacity": self.queue_capacity,
            "rollEvents": self.roll_events,
            "rollIntervalMs": self.roll_interval_ms,
        }
        return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class ProducerSpec:
    """A producer of a script and its client settings (None: the client's default).

    ``namesrv_addr`` None means no NameServer address at all. ``rpc_hook`` names a class
    implementing ``org.apache.rocketmq.remoting.RPCHook`` (with a no-argument constructor) on the
    driver's class path. ``routewatch`` installs the client hook library: the producer is then
    built by the library's one-line install, ``new RoutewatchProducer(group, rpcHook, config)``.
    """

    name: str
    namesrv_addr: str | None
    group: str | None = None
    create_topic_key: str | None = None
    default_topic_queue_nums: int | None = None
    poll_name_server_interval_ms: int | None = None
    # 15 s, not the client's 3 s: beside a loaded CI worker a real broker's first send of a new
    # topic has taken over 3 s (a "sendDefaultImpl call timeout" the test did not mean)
    send_msg_timeout_ms: int | None = 15_000
    retry_times_when_send_failed: int | None = None
    rpc_hook: str | None = None
    routewatch: HookSpec | None = None

    def to_json(self) -> dict[str, Any]:
        fields = {
            "name": self.name,
            "group": self.group,
            "createTopicKey": self.create_topic_key,
            "defaultTopicQueueNums": self.default_topic_queue_nums,
            "pollNameServerInterval": self.poll_name_server_interval_ms,
            "sendMsgTimeout": self.send_msg_timeout_ms,
            "retryTimesWhenSendFailed": self.retry_times_when_send_failed,
            "rpcHook": self.rpc_hook,
            "routewatch": None if self.routewatch is None else self.routewatch.to_json(),
        }
        spec: dict[str, Any] = {k: v for k, v in fields.items() if v is not None}
        spec["namesrvAddr"] = self.namesrv_addr
        return spec


@dataclass(frozen=True)
class SendOutcome:
    """One send as the client saw it: a status with the broker and queue, or an exception."""

    producer: str
    topic: str
    index: int
    elapsed_ms: int
    status: str | None = None
    broker: str | None = None
    queue_id: int | None = None
    msg_id: str | None = None
    exception: str | None = None
    message: str | None = None
    response_code: int | None = None
    causes: tuple[Mapping[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "SEND_OK"

    @classmethod
    def from_event(cls, e: Mapping[str, Any]) -> SendOutcome:
        return cls(
            producer=e["producer"],
            topic=e["topic"],
            index=e["index"],
            elapsed_ms=e["elapsedMs"],
            status=e.get("status"),
            broker=e.get("broker"),
            queue_id=e.get("queueId"),
            msg_id=e.get("msgId"),
            exception=e.get("exception"),
            message=e.get("message"),
            response_code=e.get("responseCode"),
            causes=tuple(e.get("causes") or ()),
        )


def _events(lines: Iterable[str], log: IO[str] | None = None) -> Iterator[dict[str, Any]]:
    for line in lines:
        if line.startswith("{"):
            yield json.loads(line)
        elif log is not None:  # anything else the client printed goes to the log
            log.write(line)


def play(
    script: Mapping[str, Any],
    workdir: Path,
    *,
    home: Path | None = None,
    classpath: Iterable[Path] = (),
    system_properties: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> list[dict[str, Any]]:
    """Play a whole script (``{"producers": [...], "steps": [...]}``) in one JVM; every line
    it printed, as objects. Fails if the driver exits with an error."""
    home = home or rocketmq_home()
    workdir.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [*_command(home, workdir, classpath, system_properties or {}), "-"],
        input=json.dumps(script),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=java_env(home),
        check=False,
    )
    (workdir / "driver.err").write_text(result.stderr)
    events = list(_events(result.stdout.splitlines(keepends=True)))
    if result.returncode != 0:
        raise DriverError(f"the driver exited with status {result.returncode}: {events}")
    return events


class RouteDriver:
    """The driver in interactive mode: one command at a time, answered before the next."""

    def __init__(
        self,
        workdir: Path,
        *,
        home: Path | None = None,
        classpath: Iterable[Path] = (),
        system_properties: Mapping[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.home = home or rocketmq_home()
        self.classpath = list(classpath)
        self.system_properties = dict(system_properties or {})
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._started: dict[str, dict[str, Any]] = {}

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        argv = _command(self.home, self.workdir, self.classpath, self.system_properties)
        with (self.workdir / "driver.err").open("a") as err:
            self._proc = subprocess.Popen(
                [*argv, "--interactive"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=java_env(self.home),
                start_new_session=True,
            )
        threading.Thread(target=self._read, args=(self._proc.stdout,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        with (self.workdir / "driver.out").open("a") as log:
            for line in stream:
                log.write(line)
                log.flush()
                self._lines.put(line)
        self._lines.put(None)

    def close(self) -> None:
        """Close the driver's input (it shuts its producers down and exits); stop it by PID."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)

    def __enter__(self) -> RouteDriver:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def command(self, command: Mapping[str, Any], timeout: float = 120) -> list[dict[str, Any]]:
        """Send one command; the lines it printed, up to its ``done``. An ``error`` line raises."""
        assert self._proc is not None and self._proc.stdin is not None, "the driver is not started"
        self._proc.stdin.write(json.dumps(command) + "\n")
        self._proc.stdin.flush()
        events: list[dict[str, Any]] = []
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise DriverError(f"no answer to {command} within {timeout:.0f} s") from None
            if line is None:
                raise DriverError(f"the driver exited while running {command}: {events}")
            for event in _events([line]):
                if event["event"] == "done":
                    errors = [e for e in events if e["event"] == "error"]
                    if errors:
                        raise DriverError(f"{command}: {errors[0]['message']}")
                    return events
                events.append(event)

    def producer(self, spec: ProducerSpec) -> dict[str, Any]:
        """Start a producer; its ``started`` line (with the settings the client took)."""
        started = self.command({"producer": spec.to_json()})[0]
        self._started[spec.name] = started
        return started

    def wait_for_first_refresh(self, producer: str, timeout: float = 30) -> None:
        """Wait until the producer's periodic route refresh has run once. The client schedules
        it 10 ms after its start, then every ``pollNameServerInterval``; on a loaded machine the
        first run can come after a test's first send and swap a route the test meant to see.
        The driver waits on the client's scheduler itself (its ``scheduled`` command): on 5.1.1
        and later the refresh no longer fetches the ``createTopicKey``'s route, which was the
        sign on 4.9."""
        self.command({"scheduled": producer}, timeout=timeout)

    def send(
        self,
        producer: str,
        topic: str,
        count: int = 1,
        spacing_ms: int = 0,
        *,
        via: str = "send",
    ) -> list[SendOutcome]:
        """``count`` sends of one message each, ``spacing_ms`` apart; their outcomes. ``via``
        names the producer's method: ``send`` (``send(message)``), ``async`` (``send(message,
        callback)``, waited for), ``oneway`` (``sendOneway(message)``: no status when it
        returns), ``selector`` (``send(message, selector, arg, timeout)``, the first queue) or
        ``batch`` (``send([message], timeout)``)."""
        events = self.command(
            {
                "send": {
                    "producer": producer,
                    "topic": topic,
                    "count": count,
                    "spacingMs": spacing_ms,
                    "via": via,
                }
            }
        )
        return [SendOutcome.from_event(e) for e in events if e["event"] == "send"]

    def client_route(self, producer: str, topic: str) -> list[tuple[str, int]] | None:
        """The producer's cached route of ``topic``: its (broker, queue id) list, or None."""
        (event,) = self.command({"route": {"producer": producer, "topic": topic}})
        queues = event["queues"]
        return None if queues is None else [(q["broker"], q["queueId"]) for q in queues]

    def refresh(self, producer: str, topic: str) -> bool:
        """The producer refreshes its route of ``topic`` from its NameServer now (as its
        periodic refresh does); True if it took a new route (the NameServer's differed from the
        one it held, or it held none usable)."""
        (event,) = self.command({"refresh": {"producer": producer, "topic": topic}})
        return bool(event["changed"])

    def shutdown(self, producer: str) -> None:
        self.command({"shutdown": producer})

    def hook_stats(self, producer: str, flush_ms: int = 0) -> dict[str, Any]:
        """A producer's hook counters (``accepted``, ``written``, ``dropped``,
        ``droppedQueueFull``, ``droppedUnwritable``, ``files``, ``unrepresentable``, ...), after
        publishing what it has queued, waiting up to ``flush_ms`` (0: no flush)."""
        (event,) = self.command({"hookStats": {"producer": producer, "flushMs": flush_ms}})
        return dict(event["stats"])


def module_driver(*producers: Callable[[RocketMQCluster], ProducerSpec]) -> Any:
    """A module-scoped ``driver`` fixture over the module's ``cluster`` fixture, with the
    producers ``producers`` make from the cluster already started. In a test module:
    ``driver = module_driver(lambda c: ProducerSpec("p", c.namesrv_addr()))``."""

    @pytest.fixture(scope="module")
    def driver(cluster: RocketMQCluster) -> Iterator[RouteDriver]:
        # the client of the cluster's own release: 4.9's against 4.9, 5.x's against 5.x
        with RouteDriver(cluster.workdir / "driver", home=cluster.home) as running:
            for make in producers:
                running.producer(make(cluster))
            yield running

    return driver
