"""The test harness: one Spark session and one real Kafka broker per test session; in CI
(``CI=true``), a skipped Kafka or RocketMQ test fails the run."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Generator, Iterator
from pathlib import Path

import pluggy
import pytest

from routewatch.testing import parts
from routewatch.testing.kafka import KafkaBroker, KafkaNotFoundError, kafka_lib, running_broker
from routewatch.testing.postgres import Postgres, running_postgres


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A local[2] Spark session: UI off, UTC, 2 shuffle partitions, RocksDB state store, and
    Spark's Kafka connector from the install step's cache when it is there (nothing is fetched
    at test time)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from streaming.spark.session import spark_session, stop_session

    conf = {}
    # without it the Kafka tests are skipped (kafka_broker): the others need no connector
    with contextlib.suppress(parts.PartMissingError):
        conf["spark.jars"] = parts.spark_kafka_jars()
    session = spark_session("local[2]", "routewatch-tests", conf)
    try:
        yield session
    finally:
        stop_session(session)  # queries, state stores, then the session


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A real Apache Kafka 4.x broker (KRaft, broker and controller in one) on free 127.0.0.1
    ports; the Kafka tests are skipped with one sentence when the install step has not fetched
    Kafka and Spark's Kafka connector."""
    try:
        kafka_lib()
        parts.home("spark-kafka")
    except (KafkaNotFoundError, parts.PartMissingError) as exc:
        pytest.skip(str(exc))
    with running_broker() as broker:
        yield broker


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    """A real PostgreSQL server on a free 127.0.0.1 port; ``routewatch`` is trusted there."""
    with running_postgres(tmp_path_factory.mktemp("postgres")) as server:
        yield server


@pytest.fixture
def kafka_env(kafka_broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch) -> KafkaBroker:
    """Point the ROUTEWATCH_KAFKA_* settings at the test broker."""
    monkeypatch.setenv("ROUTEWATCH_KAFKA_BOOTSTRAP", kafka_broker.bootstrap)
    return kafka_broker


# -- markers: what a test starts, and the fast suite ---------------------------------------------

# A fixture that starts a part, and the part's marker (RocketMQ tests are marked where their
# clusters are made).
PART_FIXTURES = {"spark": "spark", "kafka_broker": "kafka"}
# What puts a test outside the fast suite (``pytest -m "not slow"``, minutes on two cores).
SLOW_PARTS = ("spark", "kafka", "rocketmq")


@pytest.hookimpl(tryfirst=True)  # before xdist's, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that starts Spark or Kafka carries that part's marker, whether or not its
    module says so; and every test of Spark, Kafka or RocketMQ is also ``slow``, so that the
    suite without the ``slow`` marker is the fast one."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        for fixture, marker in PART_FIXTURES.items():
            if fixture in names and item.get_closest_marker(marker) is None:
                item.add_marker(marker)
        slow = any(item.get_closest_marker(part) for part in SLOW_PARTS)
        if slow and item.get_closest_marker("slow") is None:
            item.add_marker("slow")
    bands = module_bands(items)
    items.sort(key=lambda item: bands[item.path])
    for item in items:  # for --dist loadgroup (.ci/test): a module is one unit of work...
        module = item.nodeid.split("::")[0]  # ...and the RocketMQ modules are one, run in turn
        item.add_marker(pytest.mark.xdist_group("rocketmq" if bands[item.path] == 0 else module))
        item.stash[BAND] = bands[item.path]


BAND = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)  # before the fixtures start a module's cluster
def pytest_runtest_setup(item: pytest.Item) -> None:
    """On a worker of a two-worker run, the RocketMQ modules run on one core: everything they
    start inherits this process's CPUs, so a cluster starting (five JVMs compiling at once) cannot
    take the core the other worker's Spark needs to start a Python worker in its fixed 10 s."""
    if os.environ.get("PYTEST_XDIST_WORKER") and item.stash.get(BAND, 2) == 0:
        confine_to_one_core()
    else:
        release_cores()


_ALL_CPUS = frozenset(os.sched_getaffinity(0))


def confine_to_one_core() -> None:
    """This process (every thread of it) on the highest CPU it may use; what it starts after
    inherits that."""
    _set_cpus({max(_ALL_CPUS)})


def release_cores() -> None:
    _set_cpus(set(_ALL_CPUS))


def _set_cpus(cpus: set[int]) -> None:
    if os.sched_getaffinity(0) == cpus:
        return
    for task in os.listdir("/proc/self/task"):  # affinity is a thread's: set it on every one
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task), cpus)


def module_bands(items: list[pytest.Item]) -> dict[Path, int]:
    """The suite's modules in three bands, run in this order (each band in collection order, each
    module whole): 0, those that start RocketMQ clusters (minutes each, mostly waiting on a
    NameServer's clock); 1, the other slow ones; 2, the fast ones.

    ``.ci/test`` runs the suite on two workers (pytest-xdist, ``--dist loadgroup``), handing out
    one module at a time in this order — but the RocketMQ modules as one unit, on one worker, one
    after the other: two clusters starting at once on two cores make both too slow for the
    NameServers' clocks the tests measure. So one worker runs the clusters, which mostly wait,
    while the other runs Spark and the rest, and the fast modules fill the end."""
    bands: dict[Path, int] = {}
    for item in items:
        rank = 2
        if item.get_closest_marker("rocketmq"):
            rank = 0
        elif item.get_closest_marker("slow"):
            rank = 1
        bands[item.path] = min(rank, bands.get(item.path, 2))
    return bands


# -- in CI, a skipped test of a real part is a failure --------------------------------------------

REAL_PARTS = ("kafka", "rocketmq")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    """With ``CI=true``, a Kafka or RocketMQ test that was skipped fails instead, with the skip's
    reason: a missing install step must not pass as a green run."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or os.environ.get("CI", "").lower() != "true":
        return
    marked = [m for m in REAL_PARTS if item.get_closest_marker(m) is not None]
    if marked:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"in CI a skipped {marked[0]} test fails the run: {reason}"
