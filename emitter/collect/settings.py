"""The collector's settings: the emitter's (sinks) plus its own, from ``ROUTEWATCH_*``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import NoDecode

from emitter.settings import EmitterSettings
from routewatch.settings import ClusterAccessSettings

__all__ = ["CollectSettings"]


class CollectSettings(EmitterSettings, ClusterAccessSettings):
    """Built once, in the ``collect`` command."""

    collect_namesrv: str = Field(
        default="",
        description="The NameServers to watch, host:port;host:port (--namesrv wins).",
    )
    collect_poll_interval_s: float = Field(
        default=10.0,
        gt=0,
        description="Seconds between two polls of every NameServer and broker.",
    )
    collect_heartbeat_interval_s: float = Field(
        default=10.0,
        gt=0,
        le=60,
        description="Seconds between two heartbeats written for a broker still listed by a "
        "NameServer, to the nearest poll (a poll that comes up to half a poll early renews; the "
        "job expires a broker after 120 s). Rounds move the job's clock every poll; keep it at "
        "the poll interval unless events cost more than they are worth.",
    )
    collect_start_timeout_s: float = Field(
        default=60.0,
        ge=0,
        description="How long the collector waits at its start for a NameServer of --namesrv "
        "to answer before it exits with an error (0: as long as it takes, e.g. for a collector "
        "started before its cluster). Once one has answered, it polls until stopped.",
    )
    collect_timeout_s: float = Field(
        default=3.0, gt=0, description="How long one request may take before it counts as failed."
    )
    collect_metrics_port: int = Field(
        default=0,
        ge=0,
        le=65535,
        description="Port of the collector's own /metrics (0: none; the counters are still "
        "logged).",
    )
    collect_metrics_host: str = Field(
        default="127.0.0.1",
        description="Address the collector's /metrics listens on (0.0.0.0: every interface, "
        "for a Prometheus on another host).",
    )
    collect_log_interval_s: float = Field(
        default=60.0, gt=0, description="Seconds between two log lines with the counters."
    )
    collect_forward_dirs: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        description="Spool directories of the client library whose events are forwarded to the "
        "sink, /dir;/dir (--forward wins; docs/collect.md).",
    )
    collect_forward_interval_s: float = Field(
        default=1.0,
        gt=0,
        description="Seconds between two looks into the forwarded directories: it adds to the "
        "client events' detection latency.",
    )

    collect_proxy_logs: Annotated[tuple[Path, ...], NoDecode] = Field(
        default=(),
        description="Logs of RocketMQ 5 proxies on this host whose gRPC clients' route misses "
        "become proxy_route_miss events, /path;/path — with the proxy's own logging, "
        "~/logs/rocketmqlogs/broker_default.log of the user it runs as (--proxy-log wins; "
        "docs/collect.md).",
    )
    collect_proxy_cluster: str = Field(
        default="DefaultCluster",
        description="The cluster those proxies serve (their rocketMQClusterName).",
    )
    collect_proxy_log_utc_offset_h: float = Field(
        default=8.0,
        ge=-14,
        le=14,
        description="The UTC offset, in hours, of the times in those logs: the proxy's own "
        "logging writes UTC+8 whatever the host's zone.",
    )

    @field_validator("collect_forward_dirs", "collect_proxy_logs", mode="before")
    @classmethod
    def _split_paths(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return tuple(Path(part.strip()) for part in value.split(";") if part.strip())

    @field_validator("collect_forward_dirs", "collect_proxy_logs")
    @classmethod
    def _check_paths(cls, value: tuple[Path, ...], info: ValidationInfo) -> tuple[Path, ...]:
        for path in value:
            if not path.is_absolute():
                raise ValueError(
                    f"ROUTEWATCH_{str(info.field_name).upper()} must hold absolute paths "
                    f"separated by ';', got '{path}'"
                )
        return value
