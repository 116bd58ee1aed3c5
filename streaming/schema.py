"""The Spark schema of events, derived from the contract's field descriptors."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from routewatch.wire import WireField, union_fields

__all__ = ["event_schema", "spark_type"]

_SCALARS: dict[str, DataType] = {"int": LongType(), "str": StringType(), "bool": BooleanType()}


def _struct(fields: tuple[WireField, ...]) -> StructType:
    return StructType([StructField(f.name, spark_type(f), nullable=True) for f in fields])


def spark_type(f: WireField) -> DataType:
    """The Spark type of one contract field (every int is a 64-bit long)."""
    if f.kind == "map":
        return MapType(StringType(), _struct(f.nested), valueContainsNull=True)
    if f.kind == "array":
        return ArrayType(_struct(f.nested), containsNull=True)
    return _SCALARS[f.kind]


def event_schema() -> StructType:
    """One row per event: the union of every event type's fields, all nullable."""
    return _struct(union_fields())
