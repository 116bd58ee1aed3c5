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
# stopped one way or the other, then a few seconds for the maintenance task to run again.
STOP_SCRIPT = """
import sys, time
from streaming.spark.session import spark_session, stop_session
how, checkpoint = sys.argv[1:]
interval = {"spark.sql.streaming.stateStore.maintenanceInterval": "500ms"}
spark = spark_session("local[1]", "routewatch-stop-order", interval)
query = (
    spark.readStream.format("rate").option("rowsPerSecond", 5).load().groupBy().count()
    .writeStream.format("noop").outputMode("complete")
    .option("checkpointLocation", checkpoint).start()
)
while (query.lastProgress or {}).get("batchId", -1) < 2:
    time.sleep(0.2)
if how == "stop_session":
    stop_session(spark)
else:
    query.stop()
    spark.stop()
time.sleep(4)
print("stopped")
"""


def _stopped(how: str, tmp_path: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", STOP_SCRIPT, how, str(tmp_path / how)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=REPO,
    )
    assert result.returncode == 0 and result.stdout == "stopped\n", result.stderr[-3000:]
    return result.stderr


@pytest.mark.slow
@pytest.mark.spark
def test_stop_session_stops_the_state_stores_before_the_session(tmp_path: Path) -> None:
    # Stopping the query and the session only: the maintenance task outlives SparkEnv.
    assert "SparkEnv not active" in _stopped("spark.stop", tmp_path)

    assert "SparkEnv not active" not in _stopped("stop_session", tmp_path)
