"""The RocketMQ launcher (:mod:`routewatch.testing.rocketmq`) as pytest fixtures: a cluster per
test module, or the module's tests skipped with one sentence when no distribution is set."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routewatch.java import find_javac
from routewatch.testing.loopback import LoopbackBindError, loopback_bind_library
from routewatch.testing.rocketmq import (
    ClusterSpec,
    RocketMQCluster,
    RocketMQNotFoundError,
    rocketmq_home,
    running_cluster,
)

__all__ = ["EVERY_MAJOR", "listeners", "loopback_listeners", "module_cluster", "require_rocketmq"]


def require_rocketmq(major: int = 4) -> Path:
    """The RocketMQ distribution of the ``major`` release line, or skip the test with the
    sentence saying what to install."""
    try:
        home = rocketmq_home(major)
        loopback_bind_library()
    except (RocketMQNotFoundError, LoopbackBindError) as exc:
        pytest.skip(str(exc))
    if find_javac() is None:
        pytest.skip("RocketMQ tests need a JDK's javac (17) for the client driver: install one.")
    return home


EVERY_MAJOR = (4, 5)
"""The release lines the suite runs on: 4.9.x and 5.x (``routewatch.testing.parts`` pins them)."""


def module_cluster(spec: ClusterSpec, major: int | tuple[int, ...] = 4) -> Any:
    """A module-scoped ``cluster`` fixture: ``spec`` started once, on RocketMQ ``major`` (4 or
    5), for the module's tests (which share it in file order), or the tests skipped when no
    distribution is installed. With a tuple of majors (``EVERY_MAJOR``) the fixture is
    parametrised: the module's tests run on each release line in turn, one cluster each, the
    test ids saying which (``[rocketmq4]``, ``[rocketmq5]``) and ``cluster.major`` too. In a
    test module: ``cluster = module_cluster(SPEC)``."""
    majors = (major,) if isinstance(major, int) else major

    @pytest.fixture(scope="module", params=majors, ids=[f"rocketmq{m}" for m in majors])
    def cluster(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Iterator[RocketMQCluster]:
        line: int = request.param
        require_rocketmq(line)
        with running_cluster(spec, tmp_path_factory.mktemp("rocketmq"), line) as running:
            yield running

    return cluster


def listeners(cluster: RocketMQCluster) -> dict[str, set[tuple[str, int]]]:
    """What each process of the cluster listens on (as ``ss -ltnp`` shows it), by name."""
    procs = {**cluster.namesrvs, **cluster.brokers}
    return {name: proc.listening() for name, proc in procs.items()}


def loopback_listeners(cluster: RocketMQCluster) -> dict[str, set[tuple[str, int]]]:
    """What each process should listen on: 127.0.0.1 only — a NameServer its port, a broker its
    port, its fast channel (port - 2) and its HA port (port + 1), which the released RocketMQ
    binds to every interface unless the harness preloads its loopback-bind library."""
    out = {name: {("127.0.0.1", ns.port)} for name, ns in cluster.namesrvs.items()}
    for name, broker in cluster.brokers.items():
        out[name] = {("127.0.0.1", broker.port + d) for d in (-2, 0, 1)}
    return out
