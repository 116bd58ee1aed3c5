"""Every benchmark, one after the other, then the headline table of ``results/latest.json``.

    .venv/bin/python -m benchmarks [--only replay_rates,fleet_realtime,...] [--table]

Each benchmark runs in a process of its own, with its default settings and the options that
make it record every headline figure of its own (:data:`BENCHMARKS`; run one alone with
``python -m benchmarks.<name> --help`` to change them), and records its figures as it ends;
``--table`` only prints the table of what is recorded. Takes about an hour and three quarters
on the 2-core development machine; nothing else should run meanwhile, since every figure is a
rate or a latency on a shared CPU. ``design_speedup`` and ``state_partitions`` run the design
before issue 38 from the git history (:mod:`benchmarks.revisions`).

They need what the tests need, installed by ``bash .ci/install --test``: ``replay_rates`` and
``detection_latency`` start a real Apache Kafka broker with :mod:`routewatch.testing.kafka`,
``collect_cost`` a real RocketMQ with :mod:`routewatch.testing.rocketmq`. ``detection_latency``'s
other cases (``--case sparse``, ``--case collector``, about 5 minutes each) run on their own.
Run them from the repository's root.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from benchmarks.results import HEADLINE_KEYS, LATEST, print_table
from routewatch.cli import plain_text

# Every benchmark, with the options that make it record each of its headline figures (without
# them state_partitions records no core_scaling or big_cluster_ratio, and the table would show
# an older run's beside this one's).
BENCHMARKS: dict[str, tuple[str, ...]] = {
    "replay_rates": (),
    "fleet_realtime": ("--compare-partitions", "1,2"),
    # this checkout's job against the design before issue 38, in real time (issue 38)
    "design_speedup": (),
    "kafka_read": (),
    "detection_latency": (),
    "api_load": (),
    "collect_cost": (),
    "chained_state": (),  # a prototype's findings (issue 38), not a headline figure
    "engine_step": (),  # the engine alone, without Spark (issue 38's baseline)
    # the job over one task and several, on one core, and over one big cluster (issue 38)
    "state_partitions": ("--one-core", "--big"),
    # where a batch's time and cores go, by stage, with 1 and 2 partitions (issue 38)
    "stage_profile": (),
    # routewatch watch on the sandbox: memory, CPU at rest, the first alert (issue 73)
    "watch_footprint": (),
}


TARGETS = {
    "detection_latency_p95_s": "<= lateness bound + 2 s",
    "lateness_bound_s": "",
    "fleet_max_speed": ">= 1x (issue 38: >= 4x)",
    "ceiling_ratio": ">= 0.5",
    "jvm_rss_gib": "<= 2 GiB",
    "replay_kafka_events_per_s": ">= 30,000",
    "api_p99_ms": "",
    "capacity_ratio": ">= 0.5",
    "core_scaling": ">= 1.5x",
    "fleet_speedup_same_run": ">= 2x",
    "big_cluster_ratio": "<= 1.25x",
    "watch_rss_mb": "<= 1024",
    "watch_first_alert_s": "<= 90",
}


def headline_table() -> None:
    if not LATEST.exists():
        print(f"nothing recorded yet in {LATEST}")
        return
    data = json.loads(LATEST.read_text())
    machine = data.get("machine", {})
    print(
        f"\n{LATEST} ({data.get('date')}; {machine.get('cpus')} CPUs {machine.get('cpu_model')}, "
        f"{machine.get('memory_gib')} GiB)"
    )
    print_table(
        ["figure", "value", "target"],
        [[key, data.get(key, "not measured"), TARGETS[key]] for key in HEADLINE_KEYS],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--only", default=",".join(BENCHMARKS))
    parser.add_argument("--table", action="store_true", help="only print what is recorded")
    args = parser.parse_args()
    failed = []
    if not args.table:
        for name in args.only.split(","):
            if name not in BENCHMARKS:
                parser.error(f"unknown benchmark {name!r}: choose among {', '.join(BENCHMARKS)}")
            print(f"\n=== {name}", flush=True)
            command = [sys.executable, "-m", f"benchmarks.{name}", *BENCHMARKS[name]]
            if subprocess.run(command, check=False).returncode:
                failed.append(name)
    headline_table()
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
