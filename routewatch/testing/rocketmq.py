"""Real Apache RocketMQ clusters (NameServers and brokers) on free 127.0.0.1 ports, for tests.

The distributions are the RocketMQ 4.9.x and 5.x that ``.ci/install --test`` resolves from Maven
Central into ``.cache/parts/`` (``routewatch.testing.parts``); ``ROUTEWATCH_TEST_ROCKETMQ_HOME``
names another folder that replaces the one of its release line: RocketMQ's binary layout, ``lib/``
with the jars and ``conf/`` with the logback files. Without one, the tests that need it are
skipped with one sentence saying what to do (``tests.support.rocketmq``; in CI they fail).

RocketMQ 5.x runs the same way (``running_cluster(spec, workdir, major=5)``): the NameServer and
the broker, which remoting clients (the collector, ``DefaultMQProducer``) talk to directly.

A cluster is started from a description (:class:`ClusterSpec`): 1-3 NameServers and 1-4 brokers,
each broker with its own properties. Every process is a plain ``java`` child of the test, with
``ROCKETMQ_HOME`` set, a directory of its own under the test's (its ``user.home``, where RocketMQ
writes logs, its properties, its store), a small heap, and the loopback-bind library preloaded
(:mod:`routewatch.testing.loopback`), so that it listens on 127.0.0.1 only; it is ready when its
stdout says ``boot success`` and, for a broker, when every NameServer it registers with lists it at
its address and it gives its run-time figures (which ``mqadmin clusterList`` asks for). Processes
are stopped by their own PIDs (SIGTERM, then SIGKILL). :class:`Broker` has the faults: ``kill()``
(SIGKILL), ``freeze()``/``thaw()`` (SIGSTOP/SIGCONT: the connection stays open), ``restart()`` on
its old store, optionally with changed properties. ``mqadmin`` runs through
:meth:`RocketMQCluster.mqadmin` and its helpers; routes and the cluster list are read from each
NameServer directly, over RocketMQ's protocol (:mod:`routewatch.remoting`), and the real client is
driven by :mod:`tests.support.route_driver`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from routewatch import remoting
from routewatch.remoting import ClusterInfo, TopicRoute
from routewatch.testing import parts
from routewatch.testing.loopback import loopback_bind_library
from routewatch.testing.processes import free_port, listening_addresses, stop, wait_for

HOME_VARIABLE = "ROUTEWATCH_TEST_ROCKETMQ_HOME"
NEEDED_JARS = ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-client", "rocketmq-tools")
# RocketMQ 4.9 on Java 17 needs these (its README's bin/java17-opts), and they are harmless on 8.
JAVA17_OPTS = (
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "-XX:+UseG1GC",
    "-Djava.net.preferIPv4Stack=true",
)
# C1 only: the processes start in about half the CPU time, on a machine whose cores are shared.
QUICK_JIT = "-XX:TieredStopAtLevel=1"
# A NameServer's or broker's listeners without TLS: the default, permissive mode builds a
# self-signed SSL context per listener at start (TlsSystemConfig, NettyRemotingServer
# .loadSslContext), 10-15 s of a 4.9 broker's 16 s boot and as much on 5.x. Plain TCP, which
# permissive mode also accepts, is all routewatch and the clients here speak.
TLS_OFF = "-Dtls.server.mode=disabled"
NAMESRV_HEAP = ("-Xms64m", "-Xmx128m")
BROKER_HEAP = ("-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=128m")
TOOL_HEAP = ("-Xmx128m",)
BOOT_SUCCESS = "boot success"
# mqadmin commands that give the same result when run twice
REPEATABLE_MQADMIN = frozenset({"updateTopic", "updateBrokerConfig", "topicRoute", "clusterList"})
_REGISTERED = re.compile(
    rb"register broker\[\d+\]to name server (\S+) OK\s*$"
    rb"|Registering current broker to name server completed\. TargetHost=(\S+)"
)


class RocketMQNotFoundError(RuntimeError):
    """No RocketMQ distribution is configured; the message says what to set."""


def _is_distribution(home: Path) -> bool:
    jars = [p.name for p in (home / "lib").glob("rocketmq-*.jar")]
    return all(any(j.startswith(f"{name}-") for j in jars) for name in NEEDED_JARS)


@functools.cache
def release(home: Path) -> tuple[int, ...]:
    """The RocketMQ release of a distribution, from its broker jar's name (``(4, 9, 7)``)."""
    for jar in (home / "lib").glob("rocketmq-broker-*.jar"):
        match = re.fullmatch(r"rocketmq-broker-(\d+)\.(\d+)\.(\d+).*\.jar", jar.name)
        if match:
            return tuple(int(g) for g in match.groups())
    raise RocketMQNotFoundError(
        f"{home} has no lib/rocketmq-broker-<version>.jar naming its release."
    )


def rocketmq_home(major: int = 4) -> Path:
    """A RocketMQ distribution of the ``major`` release line (4: 4.9.x, 5: 5.x): the folder named
    by ``ROUTEWATCH_TEST_ROCKETMQ_HOME`` when it holds a release of that line, else the one the
    install step resolved from Maven Central into ``.cache/parts/``; raises
    :class:`RocketMQNotFoundError` with one sentence."""
    if shutil.which("java") is None:
        raise RocketMQNotFoundError(
            "RocketMQ tests need `java` (17) on the PATH: install a JDK 17."
        )
    value = os.environ.get(HOME_VARIABLE, "")
    if value:
        home = Path(value).resolve()
        if not _is_distribution(home):
            raise RocketMQNotFoundError(
                f"{HOME_VARIABLE}={value} is not a RocketMQ distribution (no lib/ with the "
                "namesrv, broker, client and tools jars): set it to a RocketMQ 4.9.x or 5.x "
                "folder, or unset it to use the ones the install step fetches."
            )
        if release(home)[0] == major:
            return home
    try:
        return parts.home(f"rocketmq{major}")
    except parts.PartMissingError as exc:
        raise RocketMQNotFoundError(str(exc)) from None


def _can_bind(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_low() -> int:
    """The first port the kernel hands out for outgoing connections (and port 0)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_broker_port(taken: set[int] | None = None) -> int:
    """A free port P such that P-2 (the broker's fast channel) and P+1 (HA) are free too, and
    none of the three in ``taken``, to which they are added. Drawn below the kernel's
    ephemeral range: a broker binds P+1 seconds after it starts, and a port of that range could
    meanwhile become the local end of any outgoing connection on the machine (the suite's
    other worker makes many)."""
    taken = set() if taken is None else taken
    high = _ephemeral_low() - 2
    for _ in range(100):
        port = random.randrange(10_002, high) if high > 10_002 else free_port()
        ports = {port - 2, port, port + 1}
        if (
            port - 2 > 1024
            and port + 1 < 65536
            and not ports & taken
            and _can_bind(port)
            and _can_bind(port - 2)
            and _can_bind(port + 1)
        ):
            taken |= ports
            return port
    raise RuntimeError("no free port with its neighbours P-2 and P+1 free was found")


def java_env(home: Path, *, server: bool = False) -> dict[str, str]:
    """The environment of a RocketMQ process: ``ROCKETMQ_HOME``, and no inherited NameServer;
    for a ``server`` (a NameServer or broker), the loopback-bind library preloaded
    (:mod:`routewatch.testing.loopback`): the released 4.9.x binds every listener to every
    interface, and 5.x its broker's HA port, with no setting to change it."""
    env = dict(os.environ)
    env["ROCKETMQ_HOME"] = str(home)
    env.pop("NAMESRV_ADDR", None)
    if server:
        env["LD_PRELOAD"] = str(loopback_bind_library())
    return env


def java_command(
    home: Path,
    user_home: Path,
    heap: tuple[str, ...],
    main: str,
    process: str = "tools",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """``java`` with RocketMQ's class path and flags and its own ``user.home``.

    4.9.x reads ``$ROCKETMQ_HOME/conf/logback_<process>.xml``; 5.x reads the logback file
    named by ``-Drmq.logback.configurationFile`` (else every process takes the proxy's from its
    jar), and its temporary files (RocksDB's native library) go to the process's own directory.
    Listening on loopback only is :func:`java_env`'s part."""
    java = shutil.which("java") or "java"
    flags = []
    if release(home)[0] >= 5:
        (user_home / "tmp").mkdir(parents=True, exist_ok=True)
        flags = [f"-Djava.io.tmpdir={user_home / 'tmp'}"]
        if process:  # (none: the process's own logging, as its distribution starts it)
            logback = home / "conf" / f"logback_{process}.xml"
            flags.insert(0, f"-Drmq.logback.configurationFile={logback}")
    return [
        java,
        *heap,
        *JAVA17_OPTS,
        QUICK_JIT,
        f"-Duser.home={user_home}",
        *flags,
        *extra,
        "-cp",
        str(home / "lib" / "*"),
        main,
    ]


@dataclass(frozen=True)
class BrokerSpec:
    """One broker of a cluster description.

    ``namesrvs`` names the NameServers it registers with (all of the cluster's when None). A
    broker with ``broker_id`` > 0 is a slave (``brokerRole=SLAVE``) of the master of the same
    name. ``properties`` are more broker properties, written as given (they win).
    """

    name: str
    cluster: str = "DefaultCluster"
    namesrvs: tuple[str, ...] | None = None
    auto_create_topic: bool = True
    default_topic_queue_nums: int = 8
    broker_id: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    # ACL enabled (aclEnable=true), with this one account (not an admin) in its plain_acl.yml:
    # every request to it must be signed with these credentials
    acl: remoting.Credentials | None = None

    @property
    def key(self) -> str:
        """The broker's handle in a cluster: its name, or ``name@id`` for a slave."""
        return self.name if self.broker_id == 0 else f"{self.name}@{self.broker_id}"


@dataclass(frozen=True)
class ClusterSpec:
    """A cluster description: the NameServers' names and the brokers."""

    brokers: tuple[BrokerSpec, ...]
    namesrvs: tuple[str, ...] = ("ns1",)
    # more properties of some NameServers, by name, written as given (e.g. 5.x's
    # deleteTopicWithBrokerRegistration)
    namesrv_properties: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= len(self.namesrvs) <= 3 or len(set(self.namesrvs)) != len(self.namesrvs):
            raise ValueError("a cluster has 1 to 3 NameServers with distinct names")
        if not 1 <= len(self.brokers) <= 4:
            raise ValueError("a cluster has 1 to 4 brokers")
        keys = [b.key for b in self.brokers]
        if len(set(keys)) != len(keys):
            raise ValueError(f"broker names (and ids) must be distinct: {keys}")
        if set(self.namesrv_properties) - set(self.namesrvs):
            raise ValueError("namesrv_properties names NameServers the cluster does not have")
        for b in self.brokers:
            unknown = set(b.namesrvs or ()) - set(self.namesrvs)
            if unknown:
                raise ValueError(f"broker {b.key} names unknown NameServers {sorted(unknown)}")


class _Process:
    """One RocketMQ JVM: started in its directory, its output in ``<dir>/<name>.out``."""

    heap: tuple[str, ...] = ()
    main = ""
    process = ""  # the logback file's name: logback_<process>.xml
    config_flag = "-c"  # the command-line option naming the configuration file
    started_line = BOOT_SUCCESS  # what its output says once it serves

    def __init__(self, name: str, home: Path, workdir: Path, port: int) -> None:
        self.name = name
        self.home = home
        self.dir = workdir / name
        self.port = port
        self.frozen = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_start = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.dir / f"{self.name}.out"

    @property
    def pid(self) -> int:
        assert self._proc is not None, f"{self.name} is not running"
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def config(self) -> Path:
        raise NotImplementedError

    def jvm_flags(self) -> tuple[str, ...]:
        """Flags of this process's JVM beyond the common ones."""
        return ()

    def spawn(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        config = self.config()
        self._log_start = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self._proc = subprocess.Popen(
                [
                    *java_command(
                        self.home,
                        self.dir,
                        self.heap,
                        self.main,
                        self.process,
                        (TLS_OFF, *self.jvm_flags()),
                    ),
                    self.config_flag,
                    str(config),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.dir,
                env=java_env(self.home, server=True),
                start_new_session=True,
            )
        self.frozen = False

    def output(self) -> str:
        """What this run of the process has printed so far."""
        with self.log.open("rb") as f:
            f.seek(self._log_start)
            return f.read().decode(errors="replace")

    def booted(self) -> bool:
        """True once this run printed its ``started_line``; fails with its output if it exited."""
        assert self._proc is not None, f"{self.name} was not started"
        if self._proc.poll() is not None:
            raise RuntimeError(
                f"{self.name} exited with status {self._proc.returncode}:\n{self.output()[-3000:]}"
            )
        return self.started_line in self.output()

    def wait_ready(self, timeout: float = 60) -> None:
        raise NotImplementedError

    def terminate(self) -> None:
        """Send SIGTERM (after SIGCONT if frozen) without waiting; :meth:`stop` waits."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            if self.frozen:
                os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, signal.SIGTERM)
        self.frozen = False

    def stop(self, timeout: float = 20) -> None:
        """SIGTERM (after SIGCONT if frozen), then SIGKILL if it lingers; by its PID."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self.frozen and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGCONT)
        self.frozen = False
        stop(proc, timeout)

    def kill(self) -> None:
        """SIGKILL, as ``kill -9``: no shutdown hook runs, the sockets close at once."""
        proc, self._proc = self._proc, None
        assert proc is not None, f"{self.name} is not running"
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        self.frozen = False

    def listening(self) -> set[tuple[str, int]]:
        """The TCP addresses the process listens on (as ``ss -ltnp`` shows them)."""
        return listening_addresses(self.pid)

    def state(self) -> str:
        """The process's state letter in ``/proc/<pid>/stat`` (R, S, D, T when stopped...)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        return stat[stat.rindex(")") + 2]

    def freeze(self, timeout: float = 10) -> None:
        """SIGSTOP, waiting until the kernel has stopped it: it no longer answers or sends, but
        its connections stay open."""
        os.kill(self.pid, signal.SIGSTOP)
        self.frozen = True
        wait_for(lambda: self.state() == "T", timeout, f"{self.name} stopping on SIGSTOP")

    def thaw(self, timeout: float = 10) -> None:
        """SIGCONT, waiting until the kernel has resumed it."""
        os.kill(self.pid, signal.SIGCONT)
        self.frozen = False
        wait_for(lambda: self.state() != "T", timeout, f"{self.name} resuming on SIGCONT")


class NameServer(_Process):
    """A NameServer (``NamesrvStartup``)."""

    heap = NAMESRV_HEAP
    main = "org.apache.rocketmq.namesrv.NamesrvStartup"
    process = "namesrv"

    def __init__(
        self,
        name: str,
        home: Path,
        workdir: Path,
        port: int,
        properties: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(name, home, workdir, port)
        self.properties = dict(properties or {})

    def config(self) -> Path:
        path = self.dir / "namesrv.properties"
        # (bindAddress: 5.x's listener address; the released 4.9.x has no such setting)
        props = {"listenPort": str(self.port), "bindAddress": "127.0.0.1", **self.properties}
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def start(self, timeout: float = 60) -> None:
        self.spawn()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        wait_for(self.ready, timeout, f"NameServer {self.name} booting on {self.addr}")

    def ready(self) -> bool:
        if not self.booted():
            return False
        try:
            remoting.cluster_info(self.addr)
        except OSError:
            return False
        return True


class Broker(_Process):
    """A broker (``BrokerStartup``) of a cluster; ``spec`` holds its current properties."""

    heap = BROKER_HEAP
    main = "org.apache.rocketmq.broker.BrokerStartup"
    process = "broker"

    def __init__(
        self,
        spec: BrokerSpec,
        home: Path,
        workdir: Path,
        port: int,
        namesrvs: Mapping[str, NameServer],
    ) -> None:
        super().__init__(spec.key, home, workdir, port)
        self.spec = spec
        self._all_namesrvs = namesrvs

    @property
    def namesrvs(self) -> list[NameServer]:
        """The NameServers this broker registers with."""
        names = self.spec.namesrvs or tuple(self._all_namesrvs)
        return [self._all_namesrvs[n] for n in names]

    @property
    def store(self) -> Path:
        return self.dir / "store"

    def properties(self) -> dict[str, str]:
        """The broker's properties file, as a mapping."""
        spec = self.spec
        props = {
            "brokerClusterName": spec.cluster,
            "brokerName": spec.name,
            "brokerId": str(spec.broker_id),
            "namesrvAddr": ";".join(ns.addr for ns in self.namesrvs),
            "brokerIP1": "127.0.0.1",
            "brokerIP2": "127.0.0.1",
            "listenPort": str(self.port),
            # 5.x: the listeners' address (the released 4.9.x has no such setting), and the HA
            # port, listenPort + 1 as by default; what either binds to every interface, the
            # loopback-bind library turns to 127.0.0.1 (java_env)
            "bindAddress": "127.0.0.1",
            "haListenPort": str(self.port + 1),
            "autoCreateTopicEnable": str(spec.auto_create_topic).lower(),
            "defaultTopicQueueNums": str(spec.default_topic_queue_nums),
            "storePathRootDir": str(self.store),
            "storePathCommitLog": str(self.store / "commitlog"),
            # Small files: a 16 MiB commit log, 3,000-entry consume queues, a small index.
            "mappedFileSizeCommitLog": "16777216",
            "mappedFileSizeConsumeQueue": "60000",
            "maxHashSlotNum": "10000",
            "maxIndexNum": "40000",
            # No flow control for a machine that is merely busy (the tests share two cores with
            # Spark): a send may wait 5 s in the broker's queue, or for the page cache, before
            # it is refused "broker busy" (RocketMQ's defaults: 200 ms and 1 s)
            "waitTimeMillsInSendQueue": "5000",
            "osPageCacheBusyTimeOutMills": "5000",
        }
        if spec.broker_id > 0:
            props["brokerRole"] = "SLAVE"
        if spec.acl is not None:
            props.update(self._acl_properties())
        props.update(spec.properties)
        return props

    def _acl_properties(self) -> dict[str, str]:
        """ACL on: 4.9's plain ACL (``aclEnable``); on 5.x, its authentication and authorization
        (``authenticationEnabled``: 5.x dropped the plain ACL), with a super user of the
        harness's own for the broker's calls and the spec's account as a normal user, taken
        from the same plain_acl.yml by 5.x's migration (``migrateAuthFromV1Enabled``)."""
        if release(self.home)[0] < 5:
            return {"aclEnable": "true"}
        auth = "org.apache.rocketmq.auth"
        superuser = {"username": "harness", "password": f"harness-{self.port}"}
        return {
            "authenticationEnabled": "true",
            "authenticationProvider": (
                f"{auth}.authentication.provider.DefaultAuthenticationProvider"
            ),
            "authenticationMetadataProvider": (
                f"{auth}.authentication.provider.LocalAuthenticationMetadataProvider"
            ),
            "authorizationEnabled": "true",
            "authorizationProvider": f"{auth}.authorization.provider.DefaultAuthorizationProvider",
            "authorizationMetadataProvider": (
                f"{auth}.authorization.provider.LocalAuthorizationMetadataProvider"
            ),
            "initAuthenticationUser": json.dumps(superuser, separators=(",", ":")),
            "innerClientAuthenticationCredentials": json.dumps(
                {"accessKey": superuser["username"], "secretKey": superuser["password"]},
                separators=(",", ":"),
            ),
            "migrateAuthFromV1Enabled": "true",
        }

    def jvm_flags(self) -> tuple[str, ...]:
        """With ACL, where its plain_acl.yml is: RocketMQ reads the file named by
        ``rocketmq.acl.plain.file`` relative to its home, so the path climbs out of it."""
        if self.spec.acl is None:
            return ()
        acl = self.dir / "plain_acl.yml"
        acl.write_text(
            "globalWhiteRemoteAddresses: []\n"
            "accounts:\n"
            f"  - accessKey: {self.spec.acl.access_key}\n"
            f"    secretKey: {self.spec.acl.secret_key}\n"
            "    admin: false\n"
            "    defaultTopicPerm: PUB|SUB\n"
            "    defaultGroupPerm: PUB|SUB\n"
        )
        return (f"-Drocketmq.acl.plain.file={os.path.relpath(acl, self.home)}",)

    def config(self) -> Path:
        path = self.dir / "broker.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def registered(self) -> bool:
        """True when every NameServer of this broker lists it, at its address."""
        for ns in self.namesrvs:
            try:
                info = remoting.cluster_info(ns.addr)
            except OSError:
                return False
            if info.addr(self.spec.name, self.spec.broker_id) != self.addr:
                return False
        return True

    def ready(self) -> bool:
        return self.booted() and self.registered() and self.reports_runtime()

    def reports_runtime(self) -> bool:
        """True once the broker can give its run-time figures. For its first second or so it
        answers that request with an error (its store has taken no statistics sample yet:
        ``NoSuchElementException`` from ``LinkedList.getLast``), and ``mqadmin clusterList``
        fails with it."""
        try:
            remoting.broker_runtime_info(self.addr, credentials=self.spec.acl)
        except (OSError, remoting.RemotingError):
            return False
        return True

    def topics(self) -> dict[str, remoting.TopicConfig]:
        """The broker's topic table, asked of the broker itself."""
        return remoting.broker_topics(self.addr, credentials=self.spec.acl)

    def registration_lines(self, namesrv: str | None = None) -> list[bytes]:
        """The lines of the broker's ``broker.log`` (across restarts) that say a registration
        with a NameServer (``namesrv``, ``ip:port``, or any) is done: 4.x's "register
        broker[0]to name server ADDR OK", 5.x's "Registering current broker to name server
        completed. TargetHost=ADDR" (``BrokerOuterAPI.registerBrokerAll``)."""
        log = self.dir / "logs" / "rocketmqlogs" / "broker.log"
        if not log.exists():
            return []
        with log.open("rb") as f:
            return [
                line
                for line in f
                if (match := _REGISTERED.search(line)) is not None
                and (namesrv is None or (match.group(1) or match.group(2)).decode() == namesrv)
            ]

    def registrations(self) -> int:
        """How many registrations with a NameServer the broker has logged as done."""
        return len(self.registration_lines())

    def running_config(self) -> dict[str, str]:
        """The properties the broker runs with now, asked of the broker itself."""
        return remoting.broker_config(self.addr, credentials=self.spec.acl)

    def answers(self, timeout: float = 2.0) -> bool:
        """True if the broker answers a request (its run-time figures) within ``timeout``."""
        try:
            remoting.broker_runtime_info(self.addr, timeout=timeout, credentials=self.spec.acl)
        except OSError:
            return False
        return True

    def start(self, timeout: float = 90) -> None:
        """Start the broker (on its store, if it has one) and wait until it is ready."""
        self.spawn()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 90) -> None:
        what = (
            f"broker {self.name} booting on {self.addr}, listed by its NameServers"
            " and giving its run-time figures"
        )
        wait_for(self.ready, timeout, what, interval=0.2)

    def restart(self, timeout: float = 90, *, lose_store: bool = False, **changes: Any) -> None:
        """Stop the broker if it runs (SIGTERM: it unregisters), and start it again on the same
        port and store — or, with ``lose_store``, on an empty one (a new disk); ``changes``
        replace fields of its :class:`BrokerSpec` first, e.g. ``auto_create_topic=False`` or
        ``properties={...}``."""
        self.stop()
        if lose_store:
            shutil.rmtree(self.store, ignore_errors=True)
        self.spec = dataclasses.replace(self.spec, **changes)
        self.start(timeout)


class Proxy(_Process):
    """A RocketMQ 5.x proxy (``ProxyStartup``) in cluster mode in front of a cluster's NameServers
    and brokers: the endpoint of 5.x's gRPC clients (``port``, its gRPC listener), which also
    answers remoting clients (``remoting_port``). At start it creates its own topic
    ``DefaultHeartBeatSyncerTopic`` on the brokers of its cluster (and fails without them).
    Plain TCP (no TLS, as the harness's other processes); its listeners, which no setting binds
    to one address, are held to 127.0.0.1 by the loopback-bind library."""

    heap = ("-Xms128m", "-Xmx256m", "-XX:MaxDirectMemorySize=128m")
    main = "org.apache.rocketmq.proxy.ProxyStartup"
    # its own logging (rmq.proxy.logback.xml in its jar), as the distribution's mqproxy starts
    # it: the log files and line format an operator's proxy writes (see default_log)
    process = ""
    config_flag = "-pc"
    started_line = "rocketmq-proxy startup successfully"

    def __init__(self, name: str, cluster: RocketMQCluster, cluster_name: str) -> None:
        if cluster.major < 5:
            raise ValueError("a proxy is RocketMQ 5.x's: start it in front of a 5.x cluster")
        super().__init__(name, cluster.home, cluster.workdir, free_port())
        self.remoting_port = free_port()
        self.cluster_name = cluster_name
        self.namesrv_addr = cluster.namesrv_addr()

    def config(self) -> Path:
        path = self.dir / "rmq-proxy.json"
        settings = {
            "proxyMode": "cluster",
            "rocketMQClusterName": self.cluster_name,
            "namesrvAddr": self.namesrv_addr,
            "grpcServerPort": self.port,
            "remotingListenPort": self.remoting_port,
            # the address the proxy gives remoting clients in routes (default: the host's IP)
            "localServeAddr": "127.0.0.1",
            "remotingAccessAddr": "127.0.0.1",
            "rocketmqMQClientNum": 1,
            "grpcThreadPoolNums": 4,
        }
        path.write_text(json.dumps(settings))
        return path

    def start(self, timeout: float = 90) -> None:
        self.spawn()
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 90) -> None:
        wait_for(self.booted, timeout, f"proxy {self.name} starting on {self.addr}", interval=0.2)

    @property
    def remoting_addr(self) -> str:
        return f"127.0.0.1:{self.remoting_port}"

    @property
    def default_log(self) -> Path:
        """The file of the proxy's root logger, where its lookups' misses go (its own logging:
        ``~/logs/rocketmqlogs/broker_default.log``)."""
        return self.dir / "logs" / "rocketmqlogs" / "broker_default.log"


class RocketMQCluster:
    """A running cluster of NameServers and brokers, from a :class:`ClusterSpec`."""

    def __init__(
        self,
        spec: ClusterSpec,
        workdir: Path,
        home: Path | None = None,
        namesrv_ports: Mapping[str, int] | None = None,
    ) -> None:
        self.spec = spec
        self.workdir = workdir
        self.home = home or rocketmq_home()
        self.release = release(self.home)
        self.major = self.release[0]  # 4 or 5: which release line's behaviour to expect
        taken: set[int] = set(namesrv_ports.values()) if namesrv_ports else set()
        self.namesrvs: dict[str, NameServer] = {}
        for name in spec.namesrvs:
            # (given ports are the caller's to check; the others are drawn free)
            port = (namesrv_ports or {}).get(name) or free_port()
            while port in taken and name not in (namesrv_ports or {}):
                port = free_port()
            taken.add(port)
            self.namesrvs[name] = NameServer(
                name, self.home, workdir, port, spec.namesrv_properties.get(name)
            )
        self.brokers: dict[str, Broker] = {
            b.key: Broker(b, self.home, workdir, free_broker_port(taken), self.namesrvs)
            for b in spec.brokers
        }
        self.proxies: dict[str, Proxy] = {}

    # -- processes ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the NameServers, then the brokers (side by side), waiting until all are ready."""
        for group in (list(self.namesrvs.values()), list(self.brokers.values())):
            for proc in group:
                proc.spawn()
            for proc in group:
                proc.wait_ready()

    def start_proxy(self, name: str = "proxy", cluster_name: str = "DefaultCluster") -> Proxy:
        """Start a 5.x proxy in cluster mode in front of this cluster (its brokers of
        ``cluster_name``), waiting until it serves; it is stopped with the cluster."""
        proxy = Proxy(name, self, cluster_name)
        self.proxies[name] = proxy
        proxy.start()
        return proxy

    def stop(self, timeout: float = 20) -> None:
        """Stop the proxies, the brokers (side by side), then the NameServers, by their PIDs."""
        groups = (list(self.proxies.values()), list(self.brokers.values()))
        for group in (*groups, list(self.namesrvs.values())):
            for proc in group:
                proc.terminate()
            for proc in group:
                proc.stop(timeout)

    def discard(self) -> None:
        """Kill every process at once (SIGKILL, by its PID): for a cluster that is thrown away
        with its directory, whose graceful shutdown (a broker's takes seconds) nobody reads."""
        for proc in [*self.proxies.values(), *self.brokers.values(), *self.namesrvs.values()]:
            if proc.running:
                proc.kill()

    def broker(self, key: str) -> Broker:
        return self.brokers[key]

    def namesrv_addr(self, name: str | None = None) -> str:
        """One NameServer's address, or (``name`` None) all of them as ``a;b``, as clients take."""
        if name is not None:
            return self.namesrvs[name].addr
        return ";".join(ns.addr for ns in self.namesrvs.values())

    # -- reading the NameServers -------------------------------------------------------------

    def route(self, topic: str, namesrv_name: str | None = None) -> TopicRoute | None:
        """The route of ``topic`` from one NameServer (the first by default), or None."""
        name = namesrv_name or next(iter(self.namesrvs))
        return remoting.topic_route(self.namesrvs[name].addr, topic)

    def routes(self, topic: str) -> dict[str, TopicRoute | None]:
        """The route of ``topic`` from every NameServer, by NameServer name."""
        return {name: remoting.topic_route(ns.addr, topic) for name, ns in self.namesrvs.items()}

    def cluster_info(self, namesrv_name: str | None = None) -> ClusterInfo:
        """One NameServer's cluster list (the first NameServer by default)."""
        name = namesrv_name or next(iter(self.namesrvs))
        return remoting.cluster_info(self.namesrvs[name].addr)

    # -- mqadmin -----------------------------------------------------------------------------

    def mqadmin(
        self, command: str, *args: str, namesrv_name: str | None = None, timeout: float = 120
    ) -> str:
        """Run ``mqadmin COMMAND ARGS -n <NameServers>``; its standard output. Fails with its
        output when it exits with an error or prints an exception."""
        tool_home = self.workdir / "mqadmin"
        tool_home.mkdir(exist_ok=True)
        argv = [
            *java_command(
                self.home, tool_home, TOOL_HEAP, "org.apache.rocketmq.tools.command.MQAdminStartup"
            ),
            command,
            *args,
            "-n",
            self.namesrv_addr(namesrv_name),
        ]
        # A request of mqadmin's that a busy broker answered too late (RemotingTimeoutException)
        # is asked again, twice at most, for the commands that can be repeated.
        tries = 3 if command in REPEATABLE_MQADMIN else 1
        for attempt in range(1, tries + 1):
            result = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=java_env(self.home),
                stdin=subprocess.DEVNULL,
                check=False,
            )
            output = result.stdout + result.stderr
            # mqadmin exits 0 when its command fails, after printing the exception's stack trace.
            if result.returncode == 0 and "Exception" not in output:
                return result.stdout
            if attempt == tries or "RemotingTimeoutException" not in output:
                raise MQAdminError(command, result.returncode, output)
        raise AssertionError("unreachable")

    def update_topic(
        self,
        topic: str,
        *,
        broker: str | None = None,
        cluster: str | None = None,
        read_queues: int = 8,
        write_queues: int = 8,
        perm: int = 6,
    ) -> str:
        """``mqadmin updateTopic`` on one broker (``-b``, by its key) or on a cluster (``-c``)."""
        if (broker is None) == (cluster is None):
            raise ValueError("update_topic takes one of broker and cluster")
        where = ["-b", self.brokers[broker].addr] if broker else ["-c", str(cluster)]
        return self.mqadmin(
            "updateTopic",
            *where,
            "-t",
            topic,
            "-r",
            str(read_queues),
            "-w",
            str(write_queues),
            "-p",
            str(perm),
        )

    def delete_topic(self, topic: str, cluster: str) -> str:
        """``mqadmin deleteTopic``: from the cluster's master brokers and every NameServer."""
        return self.mqadmin("deleteTopic", "-t", topic, "-c", cluster)

    def update_broker_config(self, broker: str, key: str, value: str) -> str:
        """``mqadmin updateBrokerConfig`` on one broker (by its key), at run time."""
        return self.mqadmin(
            "updateBrokerConfig", "-b", self.brokers[broker].addr, "-k", key, "-v", value
        )

    def mqadmin_topic_route(self, topic: str, namesrv_name: str) -> TopicRoute | None:
        """``mqadmin topicRoute`` against one NameServer, parsed; None if it has no route."""
        try:
            out = self.mqadmin("topicRoute", "-t", topic, namesrv_name=namesrv_name)
        except MQAdminError as exc:
            if "No topic route info" in exc.output:
                return None
            raise
        return remoting.parse_topic_route(out[out.index("{") :])

    def mqadmin_cluster_list(self, namesrv_name: str) -> list[ClusterListRow]:
        """``mqadmin clusterList`` against one NameServer: one row per broker it lists."""
        out = self.mqadmin("clusterList", namesrv_name=namesrv_name)
        rows = []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 4 and not line.startswith("#") and fields[2].isdigit():
                rows.append(ClusterListRow(fields[0], fields[1], int(fields[2]), fields[3]))
        return rows


@dataclass(frozen=True)
class ClusterListRow:
    """One row of ``mqadmin clusterList``: cluster, broker name, broker id, address."""

    cluster: str
    broker: str
    broker_id: int
    addr: str


class MQAdminError(RuntimeError):
    """``mqadmin`` failed; ``output`` is everything it printed."""

    def __init__(self, command: str, status: int, output: str) -> None:
        super().__init__(f"mqadmin {command} failed (status {status}):\n{output[-3000:]}")
        self.output = output


@contextlib.contextmanager
def running_cluster(spec: ClusterSpec, workdir: Path, major: int = 4) -> Iterator[RocketMQCluster]:
    """A started cluster of the ``major`` release line (4 or 5) in ``workdir``, every process
    killed afterwards (also on failure): the cluster is thrown away, so no graceful shutdown."""
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = RocketMQCluster(spec, workdir, rocketmq_home(major))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.discard()
