"""The environment of the JVM routewatch starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession


@pytest.mark.spark
def test_the_jvm_starts_with_four_malloc_arenas(spark: SparkSession) -> None:
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    environ = Path(f"/proc/{gateway.proc.pid}/environ").read_bytes().decode(errors="replace")
    jvm_env = dict(item.split("=", 1) for item in environ.split("\0") if "=" in item)
    assert jvm_env.get("MALLOC_ARENA_MAX") == "4", (
        "the JVM's MALLOC_ARENA_MAX is not routewatch's 4 (streaming.session.JVM_ENV; a value "
        "in the tests' own environment is kept: unset it)"
    )
