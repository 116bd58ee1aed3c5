"""The reference fleet in real time: this checkout's job against the design before issue 38,
in the same run — ``fleet_speedup_same_run``.

    .venv/bin/python -m benchmarks.design_speedup [--baseline c062ce8] [--clusters 10]
        [--warm 62] [--speeds 1,2,3,4,5,6,7,8,9,10] [--step 30] [--repeat 1]

Issue 38 asks the job to sustain the reference fleet in real time at twice the speed of the
design the issue began from, measured in the same run since this machine's speed moves by the
hour. That design is a revision, not a setting of this one (one partition here still has every
other change of the issue): ``--baseline``, by default :data:`benchmarks.revisions.BASELINE`,
the last commit before the issue changed the job (the whole stream in one stateful group).

Each design runs as an operator runs it: ``routewatch stream`` with routewatch's defaults (a
1 s trigger, Spark's 1 GiB heap, ``local[2]``; this checkout's default state partitions and
shards), in a process and a JVM of its own, over a spool, checkpoint and store of its own
holding the same fleet files (hard links). The revision's packages come first on its path
(:mod:`benchmarks.revisions`, which checks its Spark Python workers run them). The benchmark
follows each batch in the job's own log (``batch N: R input rows in D ms``), so it measures both
designs the same way, without a Spark session of its own:

1. **Brought up**: the first ``--warm`` seconds of traffic (the first 30 hold every broker's first
   full registration), each published once the one before is taken in; not measured.
2. **Real time**: the seconds after them published at ``speed`` seconds of traffic per
   wall-clock second, ``--step`` wall seconds per speed, speeds rising until the job falls
   behind — judged as ``benchmarks.fleet_realtime`` judges it (:func:`realtime_step`).

``--repeat`` runs both designs that many times, alternating, and takes each one's median
highest speed. Records the section ``design_speedup`` of ``benchmarks/results/latest.json`` and
two headlines: ``fleet_max_speed``, this checkout's highest sustained speed — the absolute
figure, as an operator runs the job — and ``fleet_speedup_same_run``, that over the
baseline's (the top of ``--speeds`` bounds both: a design that sustains the last speed is
reported at it).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.fleet_realtime import (
    Progress,
    SecondFiles,
    Step,
    highest_sustained,
    jvm_rss_gib,
    print_steps,
    ramp,
)
from benchmarks.results import median, print_table, record
from benchmarks.revisions import BASELINE, check_workers, checkout, environment, stream_command
from emitter.fleet import FleetSpec, generate_fleet
from routewatch.cli import plain_text

# the job's log line per batch (streaming.job.progress), the same in every revision since
# 2026-11-21
BATCH_LINE = re.compile(r"batch (\d+): (\d+) input rows in (\d+) ms")
BROUGHT_UP_S = 300.0  # the longest one second of traffic may take while the job is brought up


def batch_progress(line: str) -> dict[str, Any] | None:
    """The progress a job's log line reports, as Spark's progress JSON has it (the parts the
    real-time step reads), or None."""
    found = BATCH_LINE.search(line)
    if found is None:
        return None
    batch, rows, ms = (int(g) for g in found.groups())
    return {
        "id": "job",
        "batchId": batch,
        "numInputRows": rows,
        "durationMs": {"triggerExecution": ms},
        "stateOperators": [],
    }


@dataclass
class JobProcess:
    """``routewatch stream`` in a process group of its own, its log followed into
    :attr:`progress` (and kept in ``log``)."""

    process: subprocess.Popen[str]
    log: Path
    progress: Progress = field(default_factory=Progress)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))

    @classmethod
    def start(cls, tree: Path | None, data_dir: Path) -> JobProcess:
        env, cwd = environment(tree)
        env |= {"ROUTEWATCH_DATA_DIR": str(data_dir), "ROUTEWATCH_TRIGGER_INTERVAL_S": "1"}
        process = subprocess.Popen(
            stream_command(tree, "--source", "spool"),
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # (its JVM and Python workers end with its group)
        )
        job = cls(process, data_dir / "job.log")
        job.progress.query_id = "job"
        threading.Thread(target=job._follow, daemon=True).start()
        return job

    def _follow(self) -> None:
        assert self.process.stdout is not None
        with self.log.open("w") as out:
            for line in self.process.stdout:
                out.write(line)
                self.tail.append(line.rstrip())
                found = batch_progress(line)
                if found is not None:
                    self.progress.progress(found)
        with self.progress.changed:  # (a job that ended wakes whoever waits on it)
            self.progress.changed.notify_all()

    def failed(self, what: str) -> RuntimeError:
        return RuntimeError(
            f"the job did not {what} (exit status {self.process.poll()}); its log, "
            f"{self.log}, ends:\n" + "\n".join(self.tail)
        )

    def bring_up(self, files: SecondFiles, seconds: int) -> None:
        """Publish the first ``seconds``, each once the one before is taken in."""
        taken = 0
        for second in range(seconds):
            files.publish(second)
            taken += files.events[second]
            deadline = time.monotonic() + BROUGHT_UP_S
            while self.progress.wait_taken(0, taken, min(deadline, time.monotonic() + 5)) < taken:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise self.failed(f"take in second {second} of the traffic")

    def stop(self) -> None:
        """End the job's whole process group (its JVM and Python workers too)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def quarantined(data_dir: Path) -> int:
    """Lines the job's store holds as bad input."""
    with sqlite3.connect(data_dir / "routewatch.db") as db:
        return int(db.execute("SELECT count(*) FROM quarantine").fetchone()[0])


def run_design(
    name: str,
    tree: Path | None,
    pristine: SecondFiles,
    data_dir: Path,
    args: argparse.Namespace,
    speeds: list[float],
) -> dict[str, Any]:
    """One design over a linked copy of the fleet: brought up, then the real-time ramp."""
    files = pristine.linked_copy(data_dir / "spool")
    print(f"{name}: brought up over {args.warm} s of traffic ...", flush=True)
    job = JobProcess.start(tree, data_dir)
    try:
        job.bring_up(files, args.warm)
        workers = check_workers(tree)
        print(f"{name}: real time ({workers} Python workers checked)", flush=True)
        steps = ramp(job.progress, files, args.warm, speeds, args.step, args.drain)
        peak = jvm_rss_gib()
        if job.process.poll() is not None:
            raise job.failed("keep running")
    finally:
        job.stop()
    return {
        "max_speed": highest_sustained(steps),
        "steps": [vars(s) for s in steps],
        "jvm_rss_gib": round(peak, 2),
        "quarantined_lines": quarantined(data_dir),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=plain_text(__doc__, 1))
    parser.add_argument("--baseline", default=BASELINE, help="the revision to measure against")
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--warm", type=int, default=62, help="seconds of traffic brought up")
    parser.add_argument("--speeds", default="1,2,3,4,5,6,7,8,9,10")
    parser.add_argument("--step", type=float, default=30.0, help="wall seconds per speed")
    parser.add_argument(
        "--drain", type=float, default=1.0, help="seconds allowed beyond two batch medians"
    )
    parser.add_argument("--repeat", type=int, default=1, help="rounds of both designs")
    args = parser.parse_args()
    speeds = [float(s) for s in args.speeds.split(",")]
    tree = checkout(args.baseline)
    designs: dict[str, Path | None] = {f"baseline {args.baseline}": tree, "this checkout": None}
    ramp_s = sum(max(round(args.step * s), 1) for s in speeds)
    spec = FleetSpec(clusters=args.clusters, duration=args.warm + ramp_s)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in designs}
    with tempfile.TemporaryDirectory(prefix="routewatch-designs-") as tmp:
        pristine = SecondFiles(Path(tmp) / "pristine", spec.start_ms)
        generate_fleet(spec, pristine.write)
        pristine.close()
        per_s = median([pristine.events[s] for s in range(args.warm, spec.duration)])
        print(f"fleet: {spec.clusters} clusters, {per_s:,.0f} events per second of traffic")
        for round_ in range(args.repeat):
            for i, (name, design) in enumerate(designs.items()):
                data_dir = Path(tmp) / f"run-{round_}-{i}"
                data_dir.mkdir()
                runs[name].append(run_design(name, design, pristine, data_dir, args, speeds))
    report(args, per_s, runs)


def report(args: argparse.Namespace, per_s: float, runs: dict[str, list[dict[str, Any]]]) -> None:
    best = {name: median([r["max_speed"] for r in rs]) for name, rs in runs.items()}
    for name, rs in runs.items():
        for i, run in enumerate(rs):
            print(f"\n{name}, round {i + 1}:")
            print_steps([Step(**s) for s in run["steps"]])
    print()
    print_table(
        ["design", "highest speed sustained", "of each round", "JVM peak GiB", "bad lines"],
        [
            [
                name,
                f"{best[name]:g}x",
                ", ".join(f"{r['max_speed']:g}x" for r in rs),
                max(r["jvm_rss_gib"] for r in rs),
                max(r["quarantined_lines"] for r in rs),
            ]
            for name, rs in runs.items()
        ],
    )
    baseline, today = best.values()
    speedup = today / baseline if baseline else 0.0
    print(f"\nfleet_speedup_same_run: {speedup:.2f} (target >= 2)")
    record(
        "design_speedup",
        {
            "baseline": args.baseline,
            "clusters": args.clusters,
            "steady_traffic_events_per_s": per_s,
            "speeds": args.speeds,
            "step_s": args.step,
            "max_speed": best,
            "runs": runs,
        },
        fleet_speedup_same_run=round(speedup, 2),
        fleet_max_speed=today,
    )


if __name__ == "__main__":
    main()
