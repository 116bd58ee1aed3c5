"""Where a batch's time and cores go, stage by stage: the read stage against the stateful stage,
with 1 and with 2 state partitions, each job in a JVM of its own.

    .venv/bin/python -m benchmarks.stage_profile [--partitions 1,2] [--rounds 2] [--big]

The reference fleet (or, with ``--big``, one big cluster of the same topic-broker pairs) is
written as one spool file per second of traffic, 100 s of it. Then the job runs over it once per
number of partitions and round, alternating (1, 2, 1, 2, ...), each in a process and a JVM of its
own with Spark's UI on (bound to 127.0.0.1), 10 s of traffic per batch. For each of a job's last
six batches it reads from Spark's REST API the two stages of a steady batch — the **read stage**
(the one that writes the shuffle: validate and pack, the same work whatever the partitions) and
the **stateful stage** (the one that reads it) — with their tasks' durations, and the cores the
whole machine and the JVM used while each ran (``/proc/stat`` and the JVM's ``/proc/<pid>/stat``,
sampled every 0.1 s; the benchmark assumes nothing else runs).

The machine's speed can swing by half within minutes (the same read stage took 1.08-1.66 s
within twenty minutes on 2026-12-03), so each run's read stage is its yardstick: ``stateful /
read`` and the stateful stage's core-seconds per second of read stage compare runs taken at
different speeds. Records the section ``stage_profile`` of ``benchmarks/results/latest.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks.fleet_realtime import full_rate, spark_processes
from benchmarks.results import median, print_table, record
from benchmarks.state_partitions import _staged, child_result, job_settings
from emitter.fleet import FleetSpec
from routewatch.cli import plain_text
from streaming.spark.session import spark_session

CHILD_MARK = "stage-profile-result: "
SECONDS = 100  # of traffic: 4 batches of first registrations, 6 measured
BATCH_S = 10
UI_PORT = "4077"
_HZ = os.sysconf("SC_CLK_TCK")


class CpuSampler:
    """The machine's busy CPU seconds and the Spark JVM's, sampled every 0.1 s in a thread."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []  # (wall, machine, jvm)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> CpuSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        jvm: Path | None = None
        while not self._stop.is_set():
            with open("/proc/stat") as stat:
                ticks = [int(x) for x in stat.readline().split()[1:]]
            busy = sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
            if jvm is None:
                jvm = next((proc for group, _, proc in spark_processes() if group == "jvm"), None)
            jvm_ticks = 0
            if jvm is not None:
                try:
                    fields = (jvm / "stat").read_text().rsplit(")", 1)[1].split()
                    jvm_ticks = int(fields[11]) + int(fields[12])  # utime + stime
                except OSError:
                    pass
            self.samples.append((time.time(), busy / _HZ, jvm_ticks / _HZ))
            time.sleep(0.1)

    def cores(self, start: float, end: float) -> tuple[float, float]:
        """The machine's and the JVM's cores used between ``start`` and ``end`` (wall time)."""
        inside = [s for s in self.samples if start <= s[0] <= end]
        if len(inside) < 2:
            return float("nan"), float("nan")
        wall = inside[-1][0] - inside[0][0]
        return (inside[-1][1] - inside[0][1]) / wall, (inside[-1][2] - inside[0][2]) / wall


def _instant(text: str) -> float:
    """An instant of Spark's REST API (``2026-12-03T10:00:01.234GMT``) -> seconds."""
    parsed = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fGMT")
    return parsed.replace(tzinfo=datetime.UTC).timestamp()


def profile_job(data_dir: Path, partitions: int) -> dict[str, Any]:
    """(In a child process.) The job over ``data_dir``; its last six batches' two stages."""
    with tempfile.TemporaryDirectory(prefix="routewatch-profile-", dir=data_dir.parent) as tmp:
        job = job_settings(data_dir, BATCH_S, partitions, Path(tmp))
        conf = {"spark.driver.memory": "1g", "spark.ui.enabled": "true"}
        conf |= {"spark.ui.port": UI_PORT, "spark.ui.bindAddress": "127.0.0.1"}
        spark = spark_session("local[2]", "routewatch-bench", conf)
        spark.sparkContext.setLogLevel("ERROR")
        try:
            with CpuSampler() as sampler:
                rate = full_rate(spark, job, SECONDS // BATCH_S - 6, Path(tmp) / "checkpoint")
            base = f"{spark.sparkContext.uiWebUrl}/api/v1/applications/"
            base += spark.sparkContext.applicationId

            def get(path: str) -> Any:
                with urllib.request.urlopen(f"{base}/{path}") as answer:
                    return json.load(answer)

            stages = sorted(get("stages?status=complete"), key=lambda s: s["stageId"])
            found: dict[str, list[dict[str, Any]]] = {"read": [], "stateful": []}
            for stage in stages:
                kind = (
                    "stateful"
                    if stage.get("shuffleReadBytes")
                    else "read"
                    if stage.get("shuffleWriteBytes")
                    else None
                )
                if kind is None:
                    continue
                start, end = _instant(stage["submissionTime"]), _instant(stage["completionTime"])
                tasks = get(f"stages/{stage['stageId']}/{stage['attemptId']}/taskList?length=100")
                machine, jvm = sampler.cores(start, end)
                found[kind].append(
                    {
                        "s": end - start,
                        "tasks_s": sorted(t["duration"] / 1000 for t in tasks),
                        "cores": machine,
                        "jvm_cores": jvm,
                    }
                )
        finally:
            spark.stop()
    return {
        "partitions": partitions,
        "events_per_s": rate.per_s,
        "batch_median_s": median(rate.durations),
        "read": found["read"][-6:],
        "stateful": found["stateful"][-6:],
    }


def summary(run: dict[str, Any]) -> dict[str, float]:
    """A run's medians: each stage's duration and cores, and the stateful stage against the read
    stage (its duration, its core-seconds)."""
    read, stateful = run["read"], run["stateful"]
    read_s = median([s["s"] for s in read])
    core_s = median([s["s"] * s["cores"] for s in stateful])
    return {
        "read_s": read_s,
        "read_cores": median([s["cores"] for s in read]),
        "stateful_s": median([s["s"] for s in stateful]),
        "stateful_cores": median([s["cores"] for s in stateful]),
        "stateful_jvm_cores": median([s["jvm_cores"] for s in stateful]),
        "stateful_core_s": core_s,
        "stateful_over_read": median([s["s"] for s in stateful]) / read_s,
        "stateful_core_s_over_read_s": core_s / read_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--partitions", default="1,2")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--big", action="store_true", help="one big cluster instead of the fleet")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        data_dir, partitions = args.child.rsplit(",", 1)
        print(CHILD_MARK + json.dumps(profile_job(Path(data_dir), int(partitions))), flush=True)
        return
    spec = FleetSpec(duration=SECONDS)
    if args.big:
        spec = FleetSpec(clusters=1, brokers=spec.brokers * spec.clusters, duration=SECONDS)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="routewatch-profile-") as tmp:
        data_dir = Path(tmp) / "data"
        _staged(spec, data_dir, BATCH_S)
        for _ in range(args.rounds):
            for n in [int(p) for p in args.partitions.split(",")]:
                argv = ["--child", f"{data_dir},{n}"]
                run = child_result("benchmarks.stage_profile", argv, CHILD_MARK)
                run["at"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
                run["summary"] = summary(run)
                runs.append(run)
                print(f"{n} partitions: {run['events_per_s']:,.0f} events/s", flush=True)
    rows = []
    for run in runs:
        s = run["summary"]
        rows.append(
            [
                run["at"][11:16],
                run["partitions"],
                f"{run['events_per_s']:,.0f}",
                f"{s['read_s']:.2f} s",
                f"{s['stateful_s']:.2f} s",
                f"{s['stateful_cores']:.2f} ({s['stateful_jvm_cores']:.2f})",
                f"{s['stateful_core_s']:.2f}",
                f"{s['stateful_over_read']:.2f}",
            ]
        )
    print()
    header = ["end", "partitions", "events/s", "read stage", "stateful stage"]
    header += ["its cores (JVM)", "CPU, core-s", "stateful / read"]
    print_table(header, rows)
    record("stage_profile", {"input": "big" if args.big else "fleet", "runs": runs})


if __name__ == "__main__":
    main()
