"""The environment of the JVM routewatch starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.spark
def test_the_jvm_starts_with_four_malloc_arenas(spark: SparkSession) -> None:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    environ = Path(f"/proc/{gateway.proc.pid}/environ").read_bytes().decode(errors="replace")
    jvm_env = dict(item.split("=", 1) for item in environ.split("\0") if "=" in item)
    assert jvm_env.get("MALLOC_ARENA_MAX") == "4", (
        "the JVM's MALLOC_ARENA_MAX is not routewatch's 4 (streaming.spark.session.JVM_ENV; a "
        "value in the tests' own environment is kept: unset it)"
    )


# A session with a stateful query whose state stores' maintenance runs every half second,
# stopped one way or the other. Stopped with spark.stop(), the script waits (up to two minutes)
# until the maintenance task's complaint is in its log, the file its stderr goes to, and prints
# how long that took; stopped with stop_session, it waits the time it is given.
STOP_SCRIPT = """
import sys, time
from pathlib import Path
from streaming.spark.session import spark_session, stop_session
how, checkpoint, log, wait = sys.argv[1:]
interval = {"spark.sql.streaming.stateStore.maintenanceInterval": "500ms"}
spark = spark_session("local[1]", "routewatch-stop-order", interval)
query = (
    spark.readStream.format("rate").option("rowsPerSecond", 5).load().groupBy().count()
    .writeStream.format("noop").outputMode("complete")
    .option("checkpointLocation", checkpoint).start()
)
while (query.lastProgress or {}).get("batchId", -1) < 2:
    time.sleep(0.2)
stopped = time.monotonic()
if how == "stop_session":
    stop_session(spark)
    time.sleep(float(wait))
else:
    query.stop()
    spark.stop()
    while "SparkEnv not active" not in Path(log).read_text(errors="replace"):
        if time.monotonic() > stopped + 120:
            break
        time.sleep(0.1)
print(f"{time.monotonic() - stopped:.3f}")
"""


def _stopped(how: str, tmp_path: Path, wait: float = 0.0) -> tuple[str, float]:
    """The log of a session stopped ``how``, and the seconds from the stop to the end."""
    log = tmp_path / f"{how}.log"
    with log.open("w") as stderr:
        result = subprocess.run(
            [sys.executable, "-c", STOP_SCRIPT, how, str(tmp_path / how), str(log), str(wait)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            check=False,
            timeout=300,
            cwd=REPO,
        )
    text = log.read_text(errors="replace")
    assert result.returncode == 0, text[-3000:]
    return text, float(result.stdout)


@pytest.mark.slow
@pytest.mark.spark
def test_stop_session_stops_the_state_stores_before_the_session(tmp_path: Path) -> None:
    # Stopping the query and the session only: the maintenance task outlives SparkEnv ...
    log, seen_after = _stopped("spark.stop", tmp_path)
    assert "SparkEnv not active" in log

    # ... and with stop_session it does not, in twice the time it took to show (4 s at least)
    log, _ = _stopped("stop_session", tmp_path, wait=max(4.0, 2 * seen_after))
    assert "SparkEnv not active" not in log
