"""The spool directory as lines: Spark's text source over the folder the replayer (or any
program) publishes trace files into, each line with its origin."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streaming.settings import StreamingSettings

__all__ = ["file_lines", "spool_lines"]


def spool_lines(spark: SparkSession, settings: StreamingSettings) -> DataFrame:
    """The spool directory as a stream of ``(value, origin)`` lines (created if missing)."""
    settings.spool_dir.mkdir(parents=True, exist_ok=True)
    reader = spark.readStream.format("text")
    if settings.max_files_per_trigger:
        reader = reader.option("maxFilesPerTrigger", settings.max_files_per_trigger)
    return file_lines(reader.load(str(settings.spool_dir)))


def file_lines(text: DataFrame) -> DataFrame:
    """Lines of Spark's text source -> ``(value, origin)``; origin sorts files by modification
    time, then path, then block."""
    meta = F.col("_metadata")
    origin = F.concat_ws(
        "|",
        F.lpad(F.unix_millis(meta["file_modification_time"]).cast("string"), 15, "0"),
        meta["file_path"],
        F.lpad(meta["file_block_start"].cast("string"), 15, "0"),
    )
    return text.select("value", origin.alias("origin"))
