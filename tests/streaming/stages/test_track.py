"""The processor's state variables, as checkpoints know them."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import _parse_datatype_string

from streaming.stages.track import STATE_VARIABLES, schema

VARIABLES = list(STATE_VARIABLES.values())
DDLS = sorted({ddl for _, key, value in VARIABLES for ddl in (key, value) if ddl is not None})


@pytest.mark.parametrize("ddl", DDLS)
def test_each_state_schema_is_the_struct_spark_parses_its_ddl_to(
    spark: SparkSession, ddl: str
) -> None:
    # a checkpoint's state schema is Spark's parse of these DDL strings (earlier versions
    # passed them as strings): a struct that differs would not resume it
    assert schema(ddl).json() == _parse_datatype_string(ddl).json()
