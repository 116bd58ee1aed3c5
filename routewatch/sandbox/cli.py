"""``routewatch sandbox``: start a local RocketMQ to try routewatch on, until Ctrl-C; and, while
it runs, ``sandbox send`` (a plain producer), ``sandbox admin`` (that release's ``mqadmin``) and
``sandbox break`` (a failure of the catalogue, for real). docs/sandbox.md walks through it.

The sandbox lives in a directory of its own (``--dir``, default ``<data dir>/sandbox``, emptied
at start): every process's files, and ``sandbox.json``, which tells the other subcommands where
it is. Its processes are children of the ``sandbox`` command, which alone changes them: ``sandbox
break`` asks it to, over a local connection (127.0.0.1, authenticated with a key in
``sandbox.json``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

from routewatch.cli import plain_text
from routewatch.errors import RoutewatchError
from routewatch.listen import check_can_listen
from routewatch.sandbox.breaks import BREAKS, apply_break
from routewatch.settings import Settings, load
from routewatch.supervise import signals_set_a_flag
from routewatch.testing import parts
from routewatch.testing.processes import free_port, pid_alive
from routewatch.testing.rocketmq import (
    TOOL_HEAP,
    BrokerSpec,
    ClusterSpec,
    RocketMQCluster,
    RocketMQNotFoundError,
    java_command,
    java_env,
    release,
    rocketmq_home,
)

__all__ = ["VERSIONS", "register"]

# the release lines the sandbox runs, newest first (the default), with their part
VERSIONS = {"5.5": 5, "4.9": 4}
STATE = "sandbox.json"
PRODUCER = Path(__file__).resolve().parent / "SandboxSend.java"
BROKER_NAMES = ("broker-a", "broker-b", "broker-c")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "sandbox",
        help="start a local RocketMQ to try routewatch on (send, admin, break while it runs)",
        description=plain_text(__doc__, paragraphs=1),
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="the sandbox's directory (default <ROUTEWATCH_DATA_DIR>/sandbox)",
    )
    parser.set_defaults(handler=_up)
    parser.add_argument(
        "--version",
        choices=list(VERSIONS),
        default=next(iter(VERSIONS)),
        help="the RocketMQ release line (default the newest, 5.5)",
    )
    parser.add_argument(
        "--namesrvs", type=int, choices=(1, 2), default=2, help="NameServers (default 2)"
    )
    parser.add_argument(
        "--brokers", type=int, choices=(2, 3), default=2, help="master brokers (default 2)"
    )
    parser.add_argument(
        "--namesrv-port",
        type=int,
        default=9876,
        help="the first NameServer's port on 127.0.0.1; the second's is the next (default 9876)",
    )
    actions = parser.add_subparsers(title="while it runs", metavar="ACTION")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--dir", type=Path, default=argparse.SUPPRESS, help="the running sandbox's directory"
    )

    send = actions.add_parser(
        "send",
        parents=[where],
        help="send messages to a topic with a plain producer",
        description="Send with a plain DefaultMQProducer of the sandbox's RocketMQ (nothing of "
        "routewatch's): to a topic that does not exist, its first send auto-creates it on the "
        "broker it goes to.",
    )
    send.add_argument("topic")
    send.add_argument("--count", type=int, default=1, help="messages to send (default 1)")
    send.add_argument(
        "--broker", default=None, help="send each to a queue of this broker (default: any)"
    )
    send.set_defaults(handler=_send)

    admin = actions.add_parser(
        "admin",
        parents=[where],
        help="run the sandbox's mqadmin (its NameServers given)",
        description="Run the sandbox release's mqadmin with the arguments given, and -n with the "
        "sandbox's NameServers, e.g. `routewatch sandbox admin topicRoute -t Orders`.",
    )
    admin.add_argument("args", nargs=argparse.REMAINDER, help="mqadmin's command and options")
    admin.set_defaults(handler=_admin)

    brk = actions.add_parser(
        "break",
        parents=[where],
        help="make a failure of the catalogue happen for real",
        description="template BROKER (it loses TBW102), kill BROKER (SIGKILL), cut BROKER "
        "NAMESRV (it stops registering with that NameServer), perm BROKER (its write permission "
        "wiped).",
    )
    brk.add_argument("kind", choices=list(BREAKS))
    brk.add_argument("target", nargs="+", metavar="BROKER [NAMESRV]")
    brk.set_defaults(handler=_break)


# -- where a sandbox is ------------------------------------------------------------------------


def _dir(args: argparse.Namespace) -> Path:
    if args.dir is not None:
        return Path(args.dir).absolute()
    return load(Settings).data_dir / "sandbox"


def _state(args: argparse.Namespace) -> dict[str, Any]:
    """The running sandbox's ``sandbox.json``; one sentence when none runs there."""
    root = _dir(args)
    try:
        state: dict[str, Any] = json.loads((root / STATE).read_text())
    except FileNotFoundError:
        raise RoutewatchError(
            f"no sandbox runs in {root}: start one with `routewatch sandbox` (in another "
            "terminal), or name its directory with --dir."
        ) from None
    if not pid_alive(state["pid"]):
        raise RoutewatchError(
            f"the sandbox of {root} has stopped (PID {state['pid']} is gone): start it again "
            "with `routewatch sandbox`."
        )
    return state


# -- up ----------------------------------------------------------------------------------------


def _home(major: int, say: Any) -> Path:
    """The RocketMQ distribution of the release line, fetched with Maven when missing."""
    if shutil.which("java") is None:
        raise RoutewatchError(
            "the sandbox runs RocketMQ on `java`, which is not on the PATH: install a JDK 17."
        )
    try:
        return rocketmq_home(major)
    except RocketMQNotFoundError:
        pass
    name = f"rocketmq{major}"
    try:
        return parts.install(name, log=lambda line: say(f"==> {line} (once; a few minutes)"))
    except parts.PartMissingError as exc:
        raise RoutewatchError(
            f"{exc} The sandbox needs only Maven and a JDK 17 for it: `python -m "
            f"routewatch.testing.parts {name}` fetches it."
        ) from None


def _spec(namesrvs: int, brokers: int) -> ClusterSpec:
    return ClusterSpec(
        namesrvs=tuple(f"ns{i + 1}" for i in range(namesrvs)),
        brokers=tuple(BrokerSpec(name) for name in BROKER_NAMES[:brokers]),
    )


def _up(args: argparse.Namespace) -> int:
    with signals_set_a_flag() as stopping:
        return _run(args, stopping)


def _run(args: argparse.Namespace, stopping: list[int]) -> int:
    def say(line: str) -> None:
        print(line, flush=True)

    root = _dir(args)
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        running = json.loads((root / STATE).read_text())
        if pid_alive(running["pid"]):
            raise RoutewatchError(
                f"a sandbox runs in {root} already (PID {running['pid']}): stop it with Ctrl-C "
                "in its terminal, or start another with --dir."
            )
    ports = {f"ns{i + 1}": args.namesrv_port + i for i in range(args.namesrvs)}
    for port in ports.values():
        check_can_listen(
            "127.0.0.1", port, "is a NameServer running? Pick free ports with --namesrv-port"
        )
    home = _home(VERSIONS[args.version], say)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    cluster = RocketMQCluster(_spec(args.namesrvs, args.brokers), root, home, namesrv_ports=ports)
    version = ".".join(map(str, release(home)))
    say(
        f"==> starting RocketMQ {version} in {root}: {args.namesrvs} NameServer(s), "
        f"{args.brokers} brokers with autoCreateTopicEnable=true (about 30 s)"
    )
    lock = threading.Lock()
    key = secrets.token_bytes(32)
    listener = Listener(("127.0.0.1", free_port()), authkey=key)
    try:
        try:
            cluster.start()
        except (TimeoutError, RuntimeError) as exc:
            raise RoutewatchError(
                f"RocketMQ did not start ({str(exc).splitlines()[0]}): each process's output "
                f"and logs are in {root}/<its name>/."
            ) from None
        addr = cluster.namesrv_addr()
        state = {
            "pid": os.getpid(),
            "release": version,
            "home": str(home),
            "namesrv_addr": addr,
            "namesrvs": {n: ns.addr for n, ns in cluster.namesrvs.items()},
            "brokers": {n: b.addr for n, b in cluster.brokers.items()},
            "control": list(listener.address),
            "key": key.hex(),
        }

        def record() -> None:
            """``sandbox.json``, with the PIDs of the processes running now."""
            procs = {**cluster.namesrvs, **cluster.brokers}
            pids = {n: p.pid for n, p in procs.items() if p.running}
            path = root / STATE
            tmp = path.with_suffix(".tmp")
            tmp.unlink(missing_ok=True)
            # readable by its owner alone: it holds the key of the sandbox's control connection
            with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
                f.write(json.dumps({**state, "pids": pids}, indent=2))
            tmp.replace(path)

        record()
        serving = threading.Thread(
            target=_serve, args=(listener, cluster, lock, say, record), daemon=True, name="control"
        )
        serving.start()
        for line in _ready_lines(cluster, addr):
            say(line)
        while not stopping:
            time.sleep(0.2)
    finally:
        listener.close()
        say("==> stopping the sandbox...")
        with lock:
            (root / STATE).unlink(missing_ok=True)
            cluster.stop()
        say(f"==> stopped; its files stay in {root}")
    return 0


def _ready_lines(cluster: RocketMQCluster, addr: str) -> list[str]:
    lines = [
        f"==> RocketMQ {'.'.join(map(str, cluster.release))} runs; every listener on 127.0.0.1:"
    ]
    lines += [f"    NameServer {n}: {ns.addr}" for n, ns in cluster.namesrvs.items()]
    lines += [f"    broker {n}: {b.addr}" for n, b in cluster.brokers.items()]
    lines += [
        f"    NameServer address: {addr}",
        "==> next, in another terminal:",
        f"    routewatch watch --namesrv '{addr}'",
        "    routewatch sandbox send Orders          (a new topic: it sticks on one broker)",
        "    routewatch sandbox break kill broker-b  (or template, cut, perm: --help)",
        "==> Ctrl-C stops the sandbox",
    ]
    return lines


def _serve(
    listener: Listener,
    cluster: RocketMQCluster,
    lock: threading.Lock,
    say: Any,
    record: Callable[[], None],
) -> None:
    """Answer ``sandbox break`` requests, one at a time, until the listener closes."""
    while True:
        try:
            conn = listener.accept()
        except OSError:
            return  # closed: the sandbox stops
        except Exception:  # a client with the wrong key: ignored
            continue
        with conn:
            try:
                kind, target = conn.recv()
                with lock:
                    try:
                        said = apply_break(cluster, kind, list(target))
                    finally:
                        record()
                say(f"==> break {kind} {' '.join(target)}: {said}")
                conn.send((True, said))
            except RoutewatchError as exc:
                conn.send((False, str(exc)))
            except Exception as exc:
                conn.send((False, f"the break failed: {exc}"))


# -- while it runs -----------------------------------------------------------------------------


def _break(args: argparse.Namespace) -> int:
    state = _state(args)
    arity = {"cut": 2}.get(args.kind, 1)
    if len(args.target) != arity:
        what = "BROKER NAMESRV" if arity == 2 else "BROKER"
        raise RoutewatchError(f"`sandbox break {args.kind}` takes {what}.")
    with Client(tuple(state["control"]), authkey=bytes.fromhex(state["key"])) as conn:
        conn.send((args.kind, args.target))
        ok, said = conn.recv()
    if not ok:
        raise RoutewatchError(said)
    print(said)
    return 0


def _tool(state: dict[str, Any], main: str, argv: list[str], root: Path) -> int:
    home = Path(state["home"])
    tools = root / "tools"
    tools.mkdir(exist_ok=True)
    command = [*java_command(home, tools, TOOL_HEAP, main), *argv]
    return subprocess.run(command, env=java_env(home), stdin=subprocess.DEVNULL).returncode


def _send(args: argparse.Namespace) -> int:
    state = _state(args)
    if args.count < 1:
        raise RoutewatchError("--count must be 1 or more.")
    argv = [state["namesrv_addr"], args.topic, str(args.count)]
    if args.broker:
        if args.broker not in state["brokers"]:
            raise RoutewatchError(
                f"the sandbox has no broker '{args.broker}': name one of "
                f"{', '.join(state['brokers'])}."
            )
        argv.append(args.broker)
    return _tool(state, str(PRODUCER), argv, _dir(args))


def _admin(args: argparse.Namespace) -> int:
    state = _state(args)
    if not args.args:
        raise RoutewatchError(
            "name mqadmin's command, e.g. `routewatch sandbox admin clusterList`."
        )
    return _tool(
        state,
        "org.apache.rocketmq.tools.command.MQAdminStartup",
        [*args.args, "-n", state["namesrv_addr"]],
        _dir(args),
    )
