"""Read-only views over the store, shaped for the API and the metrics collector: alerts
(:mod:`.alerts`), brokers (:mod:`.brokers`), topics (:mod:`.topic_index`, :mod:`.topic_routes`)
and the job's progress (:mod:`.progress`). Brokers and topics are records of
:mod:`routewatch.store.records`. Writes are the :class:`~routewatch.store.Store`'s."""

from routewatch.store.views.alerts import (
    AlertFilter,
    alert,
    alerts,
    decode_cursor,
    open_alert_counts,
    open_alerts,
    paging_alerts,
    silenced_by,
)
from routewatch.store.views.brokers import broker_views
from routewatch.store.views.progress import (
    cluster_names,
    ended_job,
    last_batch,
    newest_times,
    running_jobs,
    stream_time,
)
from routewatch.store.views.topic_index import (
    ClusterBrokers,
    SortKey,
    StoreVersion,
    TopicIndex,
    TopicPage,
    TopicSummary,
    cluster_brokers,
    decode_topic_cursor,
    encode_topic_cursor,
    store_version,
    topic_index,
    topic_summaries,
)
from routewatch.store.views.topic_routes import route_windows, topic_items, topic_routes, topic_view

__all__ = [
    "AlertFilter",
    "ClusterBrokers",
    "SortKey",
    "StoreVersion",
    "TopicIndex",
    "TopicPage",
    "TopicSummary",
    "alert",
    "alerts",
    "broker_views",
    "cluster_brokers",
    "cluster_names",
    "decode_cursor",
    "decode_topic_cursor",
    "encode_topic_cursor",
    "ended_job",
    "last_batch",
    "newest_times",
    "open_alert_counts",
    "open_alerts",
    "paging_alerts",
    "route_windows",
    "running_jobs",
    "silenced_by",
    "store_version",
    "stream_time",
    "topic_index",
    "topic_items",
    "topic_routes",
    "topic_summaries",
    "topic_view",
]
