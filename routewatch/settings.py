"""Settings every routewatch process agrees on, read from ``ROUTEWATCH_*`` environment variables.

Each process (emitter, streaming job, API) defines one subclass with its own keys and builds it
once, in its ``main()``, through :func:`load`. Nothing here runs at import time.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from routewatch.errors import RoutewatchError
from routewatch.remoting import Credentials
from routewatch.store.postgres import redacted

__all__ = [
    "ENV_PREFIX",
    "ClusterAccessSettings",
    "Settings",
    "SettingsError",
    "default_data_dir",
    "load",
]

ENV_PREFIX = "ROUTEWATCH_"

S = TypeVar("S", bound="Settings")


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/routewatch``, or ``~/.local/share/routewatch``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).absolute() / "routewatch"


class SettingsError(RoutewatchError):
    """A setting has a value routewatch cannot use."""


class Settings(BaseSettings):
    """The shared keys. Derived defaults (store, spool) follow ``data_dir``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Absolute directory for the default spool, checkpoints and SQLite store.",
    )
    store_url: str = Field(
        default="",
        description="Where alerts and route tables live: sqlite:///<absolute path> "
        "(default <data_dir>/routewatch.db) or postgresql://...",
    )
    spool_dir: Path = Field(
        default=Path(),
        description="Directory of JSON-lines event files, the embedded transport "
        "(default <data_dir>/spool).",
    )
    kafka_bootstrap: str = Field(
        default="127.0.0.1:9092", description="Kafka bootstrap servers, host:port[,host:port]."
    )
    kafka_topic: str = Field(default="routewatch.events", description="Kafka topic of events.")
    kafka_api_version: Annotated[tuple[int, ...] | None, NoDecode] = Field(
        default=None,
        description="Kafka protocol version, e.g. 0.9 (the test broker); empty or 'auto' "
        "detects it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _derive_paths(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data_dir = data.get("data_dir") or default_data_dir()
        data_dir = Path(data_dir)
        if not data_dir.is_absolute():
            raise ValueError(f"ROUTEWATCH_DATA_DIR must be an absolute path, got '{data_dir}'")
        data.setdefault("data_dir", data_dir)
        if not data.get("store_url"):
            data["store_url"] = f"sqlite:///{data_dir / 'routewatch.db'}"
        if not data.get("spool_dir"):
            data["spool_dir"] = data_dir / "spool"
        return data

    @field_validator("store_url")
    @classmethod
    def _check_store_url(cls, value: str) -> str:
        if value.startswith("sqlite:///") and Path(value.removeprefix("sqlite:///")).is_absolute():
            return value
        if value.startswith(("postgresql://", "postgres://")):
            return value
        raise ValueError(
            f"ROUTEWATCH_STORE_URL must be sqlite:///<absolute path> or postgresql://..., "
            f"got '{redacted(value)}'"
        )

    @field_validator("spool_dir")
    @classmethod
    def _check_spool_dir(cls, value: Path) -> Path:
        if not value.is_absolute():
            raise ValueError(f"ROUTEWATCH_SPOOL_DIR must be an absolute path, got '{value}'")
        return value

    @field_validator("kafka_api_version", mode="before")
    @classmethod
    def _parse_api_version(cls, value: Any) -> Any:
        if value is None or isinstance(value, tuple | list):
            return value
        text = str(value).strip()
        if text in ("", "auto"):
            return None
        try:
            return tuple(int(part) for part in text.split("."))
        except ValueError:
            raise ValueError(
                f"ROUTEWATCH_KAFKA_API_VERSION must look like 0.9 or 2.8.1, or be 'auto', "
                f"got '{text}'"
            ) from None

    @property
    def checkpoint_dir(self) -> Path:
        """Where the streaming job keeps its checkpoints."""
        return self.data_dir / "checkpoints"


def _sentence(error: ErrorDetails) -> str:
    message = str(error.get("msg", "")).removeprefix("Value error, ")
    if message.startswith(ENV_PREFIX):
        return message
    name = ENV_PREFIX + "_".join(str(part) for part in error.get("loc", ())).upper()
    return f"{name}: {message}"


class ClusterAccessSettings(Settings):
    """How routewatch signs its requests to a cluster with ACL on: ``routewatch collect``'s
    reads and ``routewatch remedy``'s (and the API's) dry runs and applies use one account."""

    collect_access_key: str = Field(
        default="",
        description="For a cluster with ACL enabled (aclEnable=true): the access key of an "
        "account of its plain_acl.yml; every request is signed with it (docs/collect.md).",
    )
    collect_secret_key: SecretStr = Field(
        default=SecretStr(""),
        description="That account's secret key (never logged or shown).",
    )

    @model_validator(mode="after")
    def _both_keys(self) -> ClusterAccessSettings:
        if bool(self.collect_access_key) != bool(self.collect_secret_key.get_secret_value()):
            raise ValueError(
                "ROUTEWATCH_COLLECT_ACCESS_KEY and ROUTEWATCH_COLLECT_SECRET_KEY go together: "
                "set both (a cluster with ACL enabled) or neither"
            )
        return self

    def credentials(self) -> Credentials | None:
        """The ACL account to sign requests with, if one is set."""
        if not self.collect_access_key:
            return None
        return Credentials(self.collect_access_key, self.collect_secret_key.get_secret_value())


def load(cls: type[S], **overrides: Any) -> S:
    """Build the process's settings, turning validation errors into one clear sentence."""
    try:
        return cls(**overrides)
    except ValidationError as exc:
        problems = "; ".join(_sentence(e) for e in exc.errors())
        raise SettingsError(f"{problems}; fix the environment and start again.") from None
