"""Where the benchmarks write their figures: ``benchmarks/results/latest.json``.

Each benchmark records its own section (every figure it measured, with the runs behind each
median) and the headline keys it owns; the file keeps the other benchmarks' entries, so the
benchmarks can run one at a time or together (``python -m benchmarks``). Every write stamps
the date and describes the machine.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["LATEST", "machine", "median", "print_table", "record"]

LATEST = Path(__file__).resolve().parent / "results" / "latest.json"

HEADLINE_KEYS = (
    "detection_latency_p95_s",
    "lateness_bound_s",
    "fleet_max_speed",
    "ceiling_ratio",
    "jvm_rss_gib",
    "replay_kafka_events_per_s",
    "api_p99_ms",
    "capacity_ratio",
    "core_scaling",
    "fleet_speedup_same_run",
    "big_cluster_ratio",
    "watch_rss_mb",
    "watch_first_alert_s",
)


def _java_version() -> str:
    try:
        out = subprocess.run(
            ["java", "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    first = (out.stderr or out.stdout).splitlines()
    return first[0].strip() if first else "unknown"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return 0.0


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    import pyspark

    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "java": _java_version(),
        "pyspark": pyspark.__version__,
    }


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def record(section: str, figures: dict[str, Any], **headline: Any) -> dict[str, Any]:
    """Merge ``figures`` as ``sections[section]`` and the ``headline`` keys into latest.json."""
    unknown = set(headline) - set(HEADLINE_KEYS)
    if unknown:
        raise ValueError(f"not a headline key: {sorted(unknown)}")
    data: dict[str, Any] = {}
    if LATEST.exists():
        data = json.loads(LATEST.read_text())
    now = datetime.datetime.now(datetime.UTC)
    data["date"] = now.date().isoformat()
    data["machine"] = machine()
    data.update(headline)
    sections = data.setdefault("sections", {})
    sections[section] = {"measured_at": now.isoformat(timespec="seconds"), **figures}
    LATEST.parent.mkdir(parents=True, exist_ok=True)
    tmp = LATEST.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(LATEST)
    return data


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain aligned table on stdout."""
    cells = [[str(h) for h in header]] + [
        [
            f"{c:,.2f}" if isinstance(c, float) else f"{c:,}" if isinstance(c, int) else str(c)
            for c in row
        ]
        for row in rows
    ]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))
