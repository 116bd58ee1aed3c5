"""In CI (``CI=true``), a Kafka or RocketMQ test that would be skipped fails the run instead
(``tests/conftest.py``), so that a missing install step cannot pass as green; elsewhere it is
skipped with the sentence saying how to install what it needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # a pytest run per case: not in the fast suite

REPO = Path(__file__).resolve().parents[1]
KAFKA_TEST = "tests/test_kafka_broker.py::test_the_broker_listens_on_loopback_only"
ROCKETMQ_TEST = "tests/test_rocketmq_routes.py::test_the_cluster_listens_on_loopback_only"


def _pytest(test: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rfs", test],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **env},
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("test", "env"),
    [
        (KAFKA_TEST, {"ROUTEWATCH_TEST_KAFKA_HOME": "."}),  # a folder with no Kafka jars
        (ROCKETMQ_TEST, {"ROUTEWATCH_TEST_ROCKETMQ_HOME": "."}),  # no RocketMQ distribution
    ],
)
def test_a_test_without_its_part_is_skipped_outside_ci_and_fails_in_ci(
    test: str, env: dict[str, str]
) -> None:
    outside = _pytest(test, CI="", **env)
    inside = _pytest(test, CI="true", **env)

    assert outside.returncode == 0, outside.stdout[-2000:]
    assert "skipped" in outside.stdout and "failed" not in outside.stdout
    assert inside.returncode == 1, inside.stdout[-2000:]
    assert "in CI a skipped" in inside.stdout
    assert "is not a RocketMQ distribution" in inside.stdout or "holds no Kafka jars" in (
        inside.stdout
    )


# .ci/test's workers: one module per unit, the RocketMQ modules one unit (tests/conftest.py)
XDIST = ("-n", "2", "--dist", "loadgroup", "--no-loadscope-reorder")
_REPORTED = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] [A-Z]+ (\S+) *$", re.MULTILINE)


def test_the_rocketmq_modules_run_on_one_worker_and_the_others_whole() -> None:
    assert " ".join(XDIST) in (REPO / ".ci" / "test").read_text()
    modules = [
        "tests/test_rocketmq_routes.py",
        "tests/test_layout.py",
        "tests/test_rocketmq_templates.py",
        "tests/routewatch/test_codec.py",
    ]
    # no RocketMQ distribution and not in CI: its tests are skipped, and still scheduled
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-m",
            "",
            "-v",
            *XDIST,
            *modules,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "CI": "", "ROUTEWATCH_TEST_ROCKETMQ_HOME": "."},
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, nodeid in _REPORTED.findall(run.stdout):
        module, _, group = nodeid.rpartition("@")
        workers.setdefault(group, set()).add(worker)
        if "test_rocketmq_" in module:
            assert group == "rocketmq", nodeid
        else:
            assert module.startswith(group), nodeid
    assert set(workers) == {"rocketmq", *modules[1::2]}
    assert all(len(w) == 1 for w in workers.values()), workers


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to confine to one")
def test_a_confined_worker_and_what_it_starts_run_on_one_core_until_released() -> None:
    from tests.conftest import confine_to_one_core, release_cores

    def child_cpus() -> int:
        probe = "import os; print(len(os.sched_getaffinity(0)))"
        return int(subprocess.check_output([sys.executable, "-c", probe], text=True))

    every = len(os.sched_getaffinity(0))
    confine_to_one_core()
    try:
        assert len(os.sched_getaffinity(0)) == 1
        assert child_cpus() == 1
    finally:
        release_cores()
    assert len(os.sched_getaffinity(0)) == every
    assert child_cpus() == every
