"""What ``routewatch remedy`` reads of a live cluster, before its actions and while it verifies
them: every NameServer's route of a topic and cluster list, a broker's own topic table and
configuration. Read-only: nothing here changes the cluster."""

from __future__ import annotations

from dataclasses import dataclass, field

from routewatch import remoting
from routewatch.remoting import ClusterInfo, Credentials, TopicConfig, TopicRoute

__all__ = ["BrokerConfig", "LiveCluster", "UnreachableError"]


class UnreachableError(Exception):
    """A NameServer or broker of the plan did not answer."""

    def __init__(self, what: str, addr: str, why: BaseException) -> None:
        super().__init__(f"{what} {addr} did not answer ({why})")
        self.what, self.addr = what, addr


@dataclass(frozen=True)
class BrokerConfig:
    """A broker's configuration as it runs, and whether it runs RocketMQ 5.x."""

    properties: dict[str, str]
    five: bool


@dataclass
class LiveCluster:
    """Reads of one cluster, each asked once and kept until :meth:`forget` (a verification
    reads again)."""

    namesrvs: list[str]
    credentials: Credentials | None = None
    timeout: float = 5.0
    _routes: dict[tuple[str, str], TopicRoute | None] = field(default_factory=dict)
    _infos: dict[str, ClusterInfo] = field(default_factory=dict)
    _tables: dict[str, dict[str, TopicConfig]] = field(default_factory=dict)

    def forget(self) -> None:
        self._routes.clear()
        self._infos.clear()
        self._tables.clear()

    def route(self, namesrv: str, topic: str) -> TopicRoute | None:
        if (namesrv, topic) not in self._routes:
            try:
                with remoting.Connection(namesrv, self.timeout) as conn:
                    self._routes[(namesrv, topic)] = remoting.route_on(conn, topic)
            except (OSError, remoting.RemotingError) as exc:
                raise UnreachableError("NameServer", namesrv, exc) from None
        return self._routes[(namesrv, topic)]

    def routes(self, topic: str) -> dict[str, TopicRoute | None]:
        """``topic``'s route on every NameServer (None where it routes none)."""
        return {ns: self.route(ns, topic) for ns in self.namesrvs}

    def info(self, namesrv: str) -> ClusterInfo:
        if namesrv not in self._infos:
            try:
                self._infos[namesrv] = remoting.cluster_info(namesrv)
            except (OSError, remoting.RemotingError) as exc:
                raise UnreachableError("NameServer", namesrv, exc) from None
        return self._infos[namesrv]

    def live_on(self, broker: str, broker_id: int = 0) -> list[str]:
        """The NameServers whose cluster list has ``broker`` (that id) live."""
        return [ns for ns in self.namesrvs if self.info(ns).addr(broker, broker_id) is not None]

    def table(self, addr: str) -> dict[str, TopicConfig]:
        """The broker's own topic table."""
        if addr not in self._tables:
            try:
                self._tables[addr] = remoting.broker_topics(
                    addr, timeout=self.timeout, credentials=self.credentials
                )
            except (OSError, remoting.RemotingError) as exc:
                raise UnreachableError("Broker", addr, exc) from None
        return self._tables[addr]

    def config(self, addr: str) -> BrokerConfig:
        """The broker's configuration, and its release line (from its answer's version)."""
        try:
            with remoting.Connection(addr, self.timeout, self.credentials) as conn:
                answer = conn.call(remoting.GET_BROKER_CONFIG)
        except (OSError, remoting.RemotingError) as exc:
            raise UnreachableError("Broker", addr, exc) from None
        if answer.code != remoting.SUCCESS:
            raise UnreachableError("Broker", addr, RuntimeError(answer.remark or answer.code))
        return BrokerConfig(
            remoting.parse_properties(answer.body), answer.version >= remoting.V5_0_0_SNAPSHOT
        )
