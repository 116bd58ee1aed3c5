"""The routewatch Grafana dashboard, built with Grafana's own dashboards-as-code SDK.

``python -m dashboards`` writes it to ``dashboards/grafana/routewatch.json``; a test proves the
committed file equals what :func:`dashboard_json` generates. Every metric a panel queries is
listed in docs/metrics.md (the recording rules' names too); each panel's description says what
to do when it turns red.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from grafana_foundation_sdk.builders import common as common_b
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, stat, statetimeline, table, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

__all__ = ["DASHBOARD_UID", "build", "dashboard_json"]

DASHBOARD_UID = "routewatch-routes"
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")
CLUSTER = 'cluster=~"$cluster"'
RED, ORANGE, GREEN = "red", "orange", "green"


def _query(
    expr: str, legend: str = "", *, ref: str = "A", instant: bool = False
) -> prometheus.Dataquery:
    q = prometheus.Dataquery().expr(expr).ref_id(ref).datasource(DATASOURCE)
    if legend:
        q = q.legend_format(legend)
    return q.instant().format(PromQueryFormat.TABLE) if instant else q.range()


def _thresholds(*steps: tuple[float | None, str]) -> dash.ThresholdsConfig:
    return (
        dash.ThresholdsConfig()
        .mode(model.ThresholdsMode.ABSOLUTE)
        .steps([model.Threshold(value=v, color=c) for v, c in steps])
    )


def _mapping(values: dict[str, tuple[str, str]]) -> list[model.ValueMapping]:
    return [
        model.ValueMap(
            options={
                value: model.ValueMappingResult(text=text, color=color, index=i)
                for i, (value, (text, color)) in enumerate(values.items())
            }
        )
    ]


def _stat(
    title: str,
    description: str,
    expr: str,
    *,
    red_at: float,
    unit: str = "none",
    color: str = RED,
) -> stat.Panel:
    return (
        stat.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .with_target(_query(expr))
        .unit(unit)
        .thresholds(_thresholds((None, GREEN), (red_at, color)))
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.NONE)
        .reduce_options(common_b.ReduceDataOptions().calcs(["lastNotNull"]))
        .height(4)
        .span(6)
    )


def _timeseries(
    title: str,
    description: str,
    targets: Sequence[prometheus.Dataquery],
    *,
    unit: str = "short",
    span: int = 12,
    height: int = 8,
    bars: bool = False,
) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .targets(list(targets))
        .unit(unit)
        .legend(
            common_b.VizLegendOptions()
            .display_mode(common.LegendDisplayMode.TABLE)
            .placement(common.LegendPlacement.RIGHT)
            .show_legend(True)
            .calcs(["lastNotNull", "max"])
        )
        .height(height)
        .span(span)
    )
    if bars:
        panel = panel.draw_style(common.GraphDrawStyle.BARS).fill_opacity(80)
    return panel


def _alerts_row() -> list[dash.Panel | stat.Panel | timeseries.Panel | table.Panel]:
    open_by_kind = (
        table.Panel()
        .title("Open alerts by kind and severity")
        .description(
            "Alerts routewatch holds open now. Critical (PARTIAL_COVERAGE, NO_ROUTE_INFO, "
            "BROKER_EXPIRED) means a topic has lost or is about to lose brokers: list them with "
            "GET /alerts?state=open&severity=critical; each alert's remedy field says what to do."
        )
        .datasource(DATASOURCE)
        .with_target(_query("sum by (kind, severity) (routewatch_alerts_open)", instant=True))
        .with_transformation(
            model.DataTransformerConfig(
                id_val="organize",
                options={"excludeByName": {"Time": True}, "renameByName": {"Value": "open"}},
            )
        )
        .sort_by([common_b.TableSortByFieldState().display_name("open").desc(True)])
        .height(8)
        .span(12)
    )
    return [
        _stat(
            "Open critical alerts",
            "Red: a topic can no longer be sent to on some or all brokers, or a broker expired. "
            "Open the table beside this panel and follow each alert's remedy.",
            'sum(routewatch_alerts_open{severity="critical"}) or vector(0)',
            red_at=1,
        ),
        _stat(
            "Open warnings",
            "Orange: a topic is at risk of being stuck, a broker refuses sends or lost its TBW102 "
            "template, or NameServers disagree. Fix before the next auto-creation makes it "
            "critical.",
            'sum(routewatch_alerts_open{severity="warning"}) or vector(0)',
            red_at=1,
            color=ORANGE,
        ),
        _stat(
            "Store readable",
            "Red: the API could not read the routewatch store for the last scrape; every other "
            "panel is stale. Check the API's log and the store (SQLite file or PostgreSQL).",
            "min(routewatch_exporter_up)",
            red_at=-1,
        )
        .thresholds(_thresholds((None, RED), (1, GREEN)))
        .mappings(_mapping({"1": ("readable", GREEN), "0": ("UNREADABLE", RED)})),
        _stat(
            "Event-time lag now",
            "How far behind real time the alerts are. Red (over 60 s): the stream job is down or "
            "falling behind, or its input stopped (a low input age below means falling behind); "
            "check its log and the pipeline-health row below.",
            "max(routewatch_stream_event_time_lag_seconds)",
            red_at=60,
            unit="s",
        ),
        open_by_kind,
        _timeseries(
            "Alerts opened",
            "Alerts opened per kind in each interval. A burst after a deploy or a broker "
            "restart points at the change; open the matching alerts with GET /alerts?kind=KIND.",
            [
                _query(
                    "sum by (kind) (increase(routewatch_alerts_opened_total[$__rate_interval]))",
                    "{{kind}}",
                )
            ],
            bars=True,
        ),
    ]


def _topics_row() -> list[table.Panel | timeseries.Panel]:
    partial = f"routewatch_topic_coverage_ratio{{{CLUSTER}}} < 1"
    worst = (
        table.Panel()
        .title("Topics with partial coverage, worst first")
        .description(
            "Topics that live on fewer brokers than the cluster's live masters (coverage below "
            "100 %); 0 % means no route at all. A topic here is a single point of failure: "
            "create it on every broker with mqadmin updateTopic -c <cluster> -t <topic>."
        )
        .datasource(DATASOURCE)
        .targets(
            [
                _query(f"sort({partial})", instant=True, ref="A"),
                _query(
                    f"max by (cluster, topic) (routewatch_topic_brokers{{{CLUSTER}}}) "
                    f"and on (cluster, topic) ({partial})",
                    instant=True,
                    ref="B",
                ),
            ]
        )
        .with_transformation(model.DataTransformerConfig(id_val="merge", options={}))
        .with_transformation(
            model.DataTransformerConfig(
                id_val="organize",
                options={
                    "excludeByName": {"Time": True},
                    "renameByName": {"Value #A": "coverage", "Value #B": "brokers"},
                },
            )
        )
        .sort_by([common_b.TableSortByFieldState().display_name("coverage")])
        .override_by_name(
            "coverage",
            [
                model.DynamicConfigValue(id_val="unit", value="percentunit"),
                model.DynamicConfigValue(
                    id_val="custom.cellOptions", value={"type": "color-background"}
                ),
                model.DynamicConfigValue(
                    id_val="thresholds",
                    value=_thresholds((None, RED), (0.5, ORANGE), (1, GREEN)).build(),
                ),
            ],
        )
        .height(10)
        .span(12)
    )
    return [
        worst,
        _timeseries(
            "Coverage over time",
            "Share of the cluster's live masters whose registrations hold the topic. A line "
            "that drops below 100 % and stays there is a topic stuck on a subset of brokers; "
            "a drop to 0 is a topic that lost every route (producers get 'No route info').",
            [
                _query(
                    f'routewatch_topic_coverage_ratio{{{CLUSTER}, topic=~"$topic"}}',
                    "{{cluster}} / {{topic}}",
                )
            ],
            unit="percentunit",
            height=10,
        )
        .min(0)
        .max(1)
        .thresholds(_thresholds((None, RED), (1, GREEN))),
        _timeseries(
            "Convergence per cluster",
            "Share of each cluster's topics on every writable master and routed alike by every "
            "NameServer (left), and topics its NameServers route differently now. Below 100 %: "
            "stuck or lost topics (see the table above) or NameServers that disagree; the "
            "console's Now page lists them.",
            [
                _query(
                    f"routewatch_cluster_topics_converged_ratio{{{CLUSTER}}}",
                    "{{cluster}} converged",
                ),
                _query(
                    f"routewatch_cluster_topics_apart{{{CLUSTER}}}", "{{cluster}} apart", ref="B"
                ),
            ],
            span=12,
        ),
        _timeseries(
            "Route changes: how long they took to reach every NameServer",
            "Over the last hour of each cluster's stream time: the median and the worst time a "
            "route change took until every NameServer routed the topic alike, and how many "
            "changes converged. Brokers register with every NameServer every 30 s: a worst "
            "above 30 s means a NameServer missed a registration.",
            [
                _query(
                    f'routewatch_cluster_route_convergence_seconds{{{CLUSTER}, quantile="0.5"}}',
                    "{{cluster}} median",
                ),
                _query(
                    f'routewatch_cluster_route_convergence_seconds{{{CLUSTER}, quantile="1"}}',
                    "{{cluster}} worst",
                    ref="B",
                ),
                _query(
                    f"routewatch_cluster_route_changes_converged{{{CLUSTER}}}",
                    "{{cluster}} changes",
                    ref="C",
                ),
            ],
            unit="s",
            span=12,
        ),
    ]


def _brokers_row() -> list[statetimeline.Panel | timeseries.Panel]:
    return [
        statetimeline.Panel()
        .title("Broker up per NameServer")
        .description(
            "One line per broker and NameServer: green while the broker's registration is live "
            "there (within 120 s). Red on every NameServer: the broker expired; check its process. "
            "Red on some only: its namesrvAddr list misses a NameServer, or that NameServer "
            "restarted; fix the broker's configuration."
        )
        .datasource(DATASOURCE)
        .with_target(
            _query(f"routewatch_broker_up{{{CLUSTER}}}", "{{cluster}} / {{broker}} @ {{namesrv}}")
        )
        .mappings(_mapping({"1": ("up", GREEN), "0": ("down", RED)}))
        .thresholds(_thresholds((None, RED), (1, GREEN)))
        .show_value(common.VisibilityMode.NEVER)
        .height(8)
        .span(24),
        _timeseries(
            "NameServer divergence",
            "Above 0: the NameServers of a cluster disagree, on a topic's brokers (topic lines) "
            "or on whether a broker is live (broker lines), so clients see different routes "
            "depending on the NameServer they ask. Check the broker's namesrvAddr list and the "
            "NameServers' logs; GET /alerts?kind=NAMESRV_DIVERGENCE lists the sides.",
            [
                _query(
                    f"routewatch:topic_brokers:namesrv_spread{{{CLUSTER}}} > 0",
                    "topic {{cluster}} / {{topic}}",
                    ref="A",
                ),
                _query(
                    f"routewatch:broker_up:namesrv_spread{{{CLUSTER}}} > 0",
                    "broker {{cluster}} / {{broker}}",
                    ref="B",
                ),
            ],
        ).thresholds(_thresholds((None, GREEN), (1, RED))),
        _timeseries(
            "'No route info' and refused sends",
            "Sends per second that failed for want of a route: NO_ROUTE_INFO ('No route info of "
            "this topic') and NO_NAMESRV (no NameServer address), and sends a broker refused "
            "with TOPIC_NOT_EXIST. Any of them means lost messages: GET /alerts?kind=NO_ROUTE_INFO "
            "gives the cause and the remedy.",
            [
                _query(
                    f"sum by (cluster, status) (rate(routewatch_sends_total{{{CLUSTER}, "
                    f'status=~"NO_ROUTE_INFO|NO_NAMESRV"}}[$__rate_interval]))',
                    "{{cluster}} {{status}}",
                    ref="A",
                ),
                _query(
                    f"sum by (cluster) (rate(routewatch_sends_total{{{CLUSTER}, "
                    f'status="TOPIC_NOT_EXIST"}}[$__rate_interval]))',
                    "{{cluster}} refused (TOPIC_NOT_EXIST)",
                    ref="B",
                ),
            ],
            unit="reqps",
        ).thresholds(_thresholds((None, GREEN), (0.001, RED))),
    ]


def _collector_row() -> list[timeseries.Panel]:
    rate = "[$__rate_interval]"
    return [
        _timeseries(
            "Collector: seconds since its last round",
            "Seconds since each routewatch collect (job routewatch-collect) finished a poll "
            "round; its rounds come every ROUTEWATCH_COLLECT_POLL_INTERVAL_S (10 s). Over 60 s "
            "(RoutewatchCollectorStalled) it hangs on a request or its sink; no line at all "
            "while it should run: it is down (RoutewatchCollectorDown). When it is a cluster's "
            "only source, routewatch judges nothing of that cluster meanwhile; check its log.",
            [_query("time() - routewatch_collect_last_round_timestamp_seconds", "{{instance}}")],
            unit="s",
            span=8,
        ),
        _timeseries(
            "Collector: NameServers and brokers not answering",
            "NameServers and brokers that did not answer the collector's last round, and failed "
            "requests per second by reason. A NameServer down or cut off from the collector "
            "shows here first; check the address, the network and the process (the collector's "
            "log names each one once).",
            [
                _query("routewatch_collect_targets_down", "{{target}} down", ref="A"),
                _query(
                    f"sum by (target, reason) (rate(routewatch_collect_errors_total{rate}))",
                    "{{target}} {{reason}}/s",
                    ref="B",
                ),
            ],
            span=8,
        ),
        _timeseries(
            "Collector: work per second",
            "Rounds, requests and events written per second by each collector, and the client "
            "library's events it forwards (files, events, bad lines skipped, failures). Requests "
            "per round stay flat in a steady cluster (docs/collect.md has the cost table); a "
            "rise means topics are asked one by one.",
            [
                _query(f"rate(routewatch_collect_polls_total{rate})", "rounds/s", ref="A"),
                _query(
                    f"sum by (target) (rate(routewatch_collect_requests_total{rate}))",
                    "{{target}} requests/s",
                    ref="B",
                ),
                _query(f"rate(routewatch_collect_events_written_total{rate})", "events/s", ref="C"),
                _query(
                    f"rate(routewatch_collect_forward_files_total{rate})", "files fwd/s", ref="D"
                ),
                _query(
                    f"rate(routewatch_collect_forward_events_total{rate})",
                    "client events fwd/s",
                    ref="E",
                ),
                _query(
                    f"rate(routewatch_collect_forward_lines_skipped_total{rate})",
                    "bad lines/s",
                    ref="F",
                ),
                _query(
                    f"sum by (reason) (rate(routewatch_collect_forward_errors_total{rate}))",
                    "fwd {{reason}} failures/s",
                    ref="G",
                ),
            ],
            span=8,
        ),
    ]


def _pipeline_row() -> list[timeseries.Panel | stat.Panel]:
    return [
        _timeseries(
            "Micro-batch duration",
            "Duration of the stream job's last micro-batch. Above the trigger interval for "
            "long, the job cannot keep up: the README's performance section has sizing figures.",
            [_query("routewatch_stream_batch_duration_seconds", "batch")],
            unit="s",
            span=6,
        ),
        _timeseries(
            "Input rate",
            "Rows read per second by the last micro-batch, and events applied per second by "
            "type. A drop to zero while brokers run means the emitters or the stream stopped.",
            [
                _query("routewatch_stream_input_rows_per_second", "input rows/s", ref="A"),
                _query(
                    "sum by (type) (rate(routewatch_events_total[$__rate_interval]))",
                    "{{type}} applied/s",
                    ref="B",
                ),
            ],
            unit="short",
            span=6,
        ),
        _timeseries(
            "Input age and job report age",
            "Input age: seconds since the job last received an event newer than every event "
            "before it. Brokers register every 30 s, so it stays low while input flows. Red "
            "(over 120 s, RoutewatchInputStalled): the collectors or emitters, the replayer or "
            "the Kafka topic stopped; routewatch judges no time-driven alert until input "
            "resumes. Job report age: seconds since the job last reported progress (a batch, "
            "or its idle report every 10 s); red (over 120 s, RoutewatchJobStopped): the job "
            "was killed or is stuck in a batch (one that stopped or failed says so: Stream job).",
            [
                _query("routewatch_stream_input_age_seconds", "input age"),
                _query("routewatch_stream_job_report_age_seconds", "job report age", ref="B"),
            ],
            unit="s",
            span=6,
        ).thresholds(_thresholds((None, GREEN), (60, ORANGE), (120, RED))),
        _timeseries(
            "Event-time lag",
            "Wall clock minus the newest event time the job has applied; alerts are that late. "
            "Rising while the input age stays low: the job falls behind its input "
            "(RoutewatchStreamBehind). Rising with the input age: the input stopped.",
            [_query("routewatch_stream_event_time_lag_seconds", "lag")],
            unit="s",
            span=6,
        ).thresholds(_thresholds((None, GREEN), (10, ORANGE), (60, RED))),
        _timeseries(
            "Quarantined, late and duplicate events",
            "Input the job did not apply. Quarantined: lines breaking the event contract (GET "
            "/quarantine shows them). Late: older than the lateness bound; raise "
            "ROUTEWATCH_LATENESS_BOUND_S if steady. Duplicates: replays or producer retries, "
            "harmless.",
            [
                _query(
                    "sum by (reason) (increase(routewatch_events_quarantined_total"
                    "[$__rate_interval]))",
                    "quarantined {{reason}}",
                    ref="A",
                ),
                _query(
                    "sum(increase(routewatch_events_late_total[$__rate_interval]))", "late", ref="B"
                ),
                _query(
                    "sum(increase(routewatch_events_duplicate_total[$__rate_interval]))",
                    "duplicate",
                    ref="C",
                ),
            ],
            span=18,
            height=6,
            bars=True,
        ),
        _stat(
            "Stream job",
            "Ended (red): the stream job recorded that its query stopped or failed "
            "(RoutewatchJobEnded), and nothing is judged until it runs again; GET /readyz says "
            "which, and the failure's cause. Start routewatch stream again: it resumes from its "
            "checkpoint. A job killed cannot say so: its report age above tells.",
            "max(routewatch_stream_job_ended)",
            red_at=1,
        )
        .mappings(_mapping({"0": ("running", GREEN), "1": ("ENDED", RED)}))
        .height(6),
    ]


def _paging_row() -> list[table.Panel | timeseries.Panel | stat.Panel]:
    paging = (
        table.Panel()
        .title("Paging alerts, one per routewatch alert")
        .description(
            "Open routewatch alerts that no silence holds: each is one Alertmanager alert, "
            "named after its kind, pushed by routewatch notify and made by the per-kind "
            "Prometheus rules alike. routewatch_id overflow: alerts beyond "
            "ROUTEWATCH_ALERT_SERIES_MAX, counted. GET /alerts/<routewatch_id> has the remedy."
        )
        .datasource(DATASOURCE)
        .with_target(_query(f"routewatch_alert_open{{{CLUSTER}}}", instant=True))
        .with_transformation(
            model.DataTransformerConfig(
                id_val="organize",
                options={
                    "excludeByName": {
                        "Time": True,
                        "__name__": True,
                        "instance": True,
                        "job": True,
                    },
                    "renameByName": {"Value": "alerts"},
                },
            )
        )
        .height(8)
        .span(12)
    )
    return [
        paging,
        _timeseries(
            "Per-alert series left out",
            "Open alerts left without a routewatch_alert_open series of their own by "
            "ROUTEWATCH_ALERT_SERIES_MAX (counted in their kind's overflow series instead), "
            "per scrape. Above 0: raise the bound, or silence what is known.",
            [
                _query(
                    "sum by (kind) (increase(routewatch_alert_series_dropped_total"
                    "[$__rate_interval]))",
                    "{{kind}}",
                )
            ],
            span=12,
            bars=True,
        ),
        _timeseries(
            "Alertmanager push: seconds since the last round and the last accepted push",
            "routewatch notify pushes every few seconds. Round age rising "
            "(RoutewatchNotifyStopped over 60 s): the pusher stopped; accepted-push age rising "
            "while rounds go on (RoutewatchNotifyFailing): that Alertmanager refuses or does not "
            "answer — routewatch notify's log says why; nothing is lost meanwhile.",
            [
                _query("time() - routewatch_notify_round_timestamp_seconds", "round {{receiver}}"),
                _query(
                    "time() - routewatch_notify_push_timestamp_seconds",
                    "accepted {{receiver}}",
                    ref="B",
                ),
            ],
            unit="s",
            span=18,
        ).thresholds(_thresholds((None, GREEN), (30, ORANGE), (60, RED))),
        _stat(
            "Alertmanager accepts the push",
            "Red: an Alertmanager refused routewatch notify's last round (RoutewatchNotifyFailing "
            "after 2 min). Check that Alertmanager and the path to it; the pusher retries every "
            "round and loses no resolve.",
            "max(routewatch_notify_failing)",
            red_at=1,
        ).mappings(_mapping({"0": ("accepted", GREEN), "1": ("REFUSED", RED)})),
    ]


def _variables() -> list[dash.DatasourceVariable | dash.QueryVariable]:
    def label_values(name: str, query: str) -> dash.QueryVariable:
        return (
            dash.QueryVariable(name)
            .label(name)
            .datasource(DATASOURCE)
            .query({"query": query, "refId": f"{name}-values", "qryType": 1})
            .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(model.VariableSort.ALPHABETICAL_ASC)
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .current(model.VariableOption(selected=True, text="All", value="$__all"))
        )

    return [
        dash.DatasourceVariable("datasource").label("Prometheus").type("prometheus"),
        label_values("cluster", "label_values(routewatch_broker_up, cluster)"),
        label_values(
            "topic", 'label_values(routewatch_topic_coverage_ratio{cluster=~"$cluster"}, topic)'
        ),
    ]


def build() -> model.Dashboard:
    """The dashboard: alerts first, then topic routes, brokers and NameServers, pipeline health."""
    board = (
        dash.Dashboard("routewatch: RocketMQ route convergence")
        .uid(DASHBOARD_UID)
        .description(
            "Routes of RocketMQ topics as the NameServers hand them out, and the alerts routewatch "
            "raises when they fail to converge."
        )
        .tags(["routewatch", "rocketmq"])
        .editable()
        .time("now-1h", "now")
        .refresh("10s")
        .timezone("browser")
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
        .variables(_variables())  # type: ignore[arg-type]
    )
    rows: list[tuple[str, Sequence[cogbuilder.Builder[model.Panel]]]] = [
        ("Alerts: start here", _alerts_row()),
        ("Topic routes", _topics_row()),
        ("Brokers and NameServers", _brokers_row()),
        ("Pipeline health", _pipeline_row()),
        ("Collector", _collector_row()),
        ("Paging (Alertmanager)", _paging_row()),
    ]
    for title, panels in rows:
        board = board.with_row(dash.Row(title))
        for panel in panels:
            board = board.with_panel(panel)
    built = board.build()
    for number, built_panel in enumerate(built.panels or [], start=1):
        built_panel.id_val = number
    return built


def dashboard_json() -> str:
    """The dashboard as Grafana's JSON model, with stable key order and a trailing newline."""
    return json.dumps(build(), cls=JSONEncoder, sort_keys=True, indent=2) + "\n"
