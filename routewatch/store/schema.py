"""The store's schema, as numbered migrations applied in order (``schema_version`` records them).

Plain SQL that SQLite and PostgreSQL both accept. Never edit a migration that has shipped: add
the next one.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS"]

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE alerts (
            id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            severity TEXT NOT NULL,
            state TEXT NOT NULL,
            cluster TEXT NOT NULL,
            topic TEXT,
            broker TEXT,
            broker_id INTEGER,
            cause TEXT,
            opened_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            resolved_at BIGINT,
            detected_at BIGINT NOT NULL,
            summary TEXT NOT NULL,
            evidence TEXT NOT NULL,
            remedy TEXT
        );
        CREATE INDEX alerts_by_state ON alerts (state, opened_at);
        CREATE INDEX alerts_by_key ON alerts (cluster, kind, topic, broker);

        CREATE TABLE alert_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            alert_id TEXT NOT NULL,
            change TEXT NOT NULL,
            at BIGINT NOT NULL,
            written_at BIGINT NOT NULL,
            alert TEXT NOT NULL
        );

        CREATE TABLE route_intervals (
            cluster TEXT NOT NULL,
            topic TEXT NOT NULL,
            namesrv TEXT NOT NULL,
            broker TEXT NOT NULL,
            broker_id INTEGER NOT NULL,
            read_queue_nums INTEGER NOT NULL,
            write_queue_nums INTEGER NOT NULL,
            perm INTEGER NOT NULL,
            valid_from BIGINT NOT NULL,
            valid_to BIGINT
        );
        CREATE INDEX route_intervals_by_topic ON route_intervals (cluster, topic, valid_from);
        CREATE INDEX route_intervals_open ON route_intervals
            (cluster, topic, namesrv, broker, broker_id, valid_to);

        CREATE TABLE brokers (
            cluster TEXT NOT NULL,
            namesrv TEXT NOT NULL,
            broker TEXT NOT NULL,
            broker_id INTEGER NOT NULL,
            addr TEXT NOT NULL,
            live INTEGER NOT NULL,
            shutdown INTEGER NOT NULL,
            auto_create INTEGER,
            template TEXT NOT NULL,
            last_heartbeat BIGINT NOT NULL,
            PRIMARY KEY (cluster, namesrv, broker, broker_id)
        );

        CREATE TABLE quarantine (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            arrived_at BIGINT NOT NULL,
            cluster TEXT,
            reason TEXT NOT NULL,
            detail TEXT NOT NULL,
            raw TEXT NOT NULL
        );
        CREATE INDEX quarantine_by_reason ON quarantine (reason, seq);

        CREATE TABLE counters (
            name TEXT NOT NULL,
            label TEXT NOT NULL,
            cluster TEXT NOT NULL,
            value BIGINT NOT NULL,
            PRIMARY KEY (name, label, cluster)
        );

        CREATE TABLE clusters (
            cluster TEXT PRIMARY KEY,
            stream_time BIGINT,
            max_received BIGINT,
            held INTEGER NOT NULL,
            updated_at BIGINT NOT NULL
        );

        CREATE TABLE batches (
            job TEXT NOT NULL,
            batch_id BIGINT NOT NULL,
            written_at BIGINT NOT NULL,
            change_rows INTEGER NOT NULL,
            input_rows BIGINT,
            duration_ms BIGINT,
            event_time_lag_ms BIGINT,
            PRIMARY KEY (job, batch_id)
        );
        """,
    ),
    (
        2,
        """
        CREATE TABLE topics (
            cluster TEXT NOT NULL,
            topic TEXT NOT NULL,
            auto_created_at BIGINT,
            PRIMARY KEY (cluster, topic)
        );

        CREATE TABLE alert_acks (
            alert_id TEXT PRIMARY KEY,
            acked_at BIGINT,
            acked_by TEXT,
            silenced_until BIGINT,
            updated_at BIGINT NOT NULL
        );
        """,
    ),
    (
        3,
        # When the newest event received last advanced (wall clock, ms): the write of the clock
        # row that raised max_received. A store written before starts from its last clock write,
        # which is no earlier than the last advance, so the input's age is never overstated.
        """
        ALTER TABLE clusters ADD COLUMN input_at BIGINT;
        UPDATE clusters SET input_at = updated_at;
        """,
    ),
    (
        4,
        # Each job's last progress report (wall clock, ms): a batch's, or Spark's report that
        # the query is idle (every 10 s while there is nothing to read), and since when its
        # batches have left input unread (NULL: it read everything there was). /readyz reads
        # them. A store written before starts from each job's last batch.
        """
        CREATE TABLE jobs (
            job TEXT PRIMARY KEY,
            reported_at BIGINT NOT NULL,
            behind_since BIGINT
        );
        INSERT INTO jobs (job, reported_at) SELECT job, MAX(written_at) FROM batches GROUP BY job;
        """,
    ),
    (
        5,
        # When a job's query ended (wall clock, ms; NULL while it runs: every progress report
        # clears it) and, if it failed, the failure's cause. A job killed without a stop
        # records nothing: its reports just end. /readyz and `routewatch reset` read them.
        """
        ALTER TABLE jobs ADD COLUMN stopped_at BIGINT;
        ALTER TABLE jobs ADD COLUMN failure TEXT;
        """,
    ),
    (
        6,
        # routewatch notify's own tables (docs/alertmanager.md). What it has pushed as firing to
        # each Alertmanager (receiver: its URL), under which labels: a row leaves only once
        # that Alertmanager has accepted the resolution, so a resolve is never forgotten across
        # a restart or an outage. The Alertmanager silences that hold a routewatch alert, as
        # each Alertmanager said at its last round (ours: made by routewatch from a silence of
        # its own API). And each receiver's last round: when, whether it was accepted, and why
        # not.
        """
        CREATE TABLE alertmanager_pushed (
            receiver TEXT NOT NULL,
            alert_id TEXT NOT NULL,
            labels TEXT NOT NULL,
            pushed_at BIGINT NOT NULL,
            PRIMARY KEY (receiver, alert_id, labels)
        );
        CREATE TABLE alertmanager_silences (
            receiver TEXT NOT NULL,
            silence_id TEXT NOT NULL,
            alert_id TEXT NOT NULL,
            ends_at BIGINT NOT NULL,
            created_by TEXT NOT NULL,
            comment TEXT NOT NULL,
            ours INTEGER NOT NULL,
            PRIMARY KEY (receiver, silence_id, alert_id)
        );
        CREATE INDEX alertmanager_silences_by_alert ON alertmanager_silences (alert_id);
        CREATE TABLE alertmanager_rounds (
            receiver TEXT PRIMARY KEY,
            tried_at BIGINT NOT NULL,
            pushed_at BIGINT,
            failure TEXT
        );
        """,
    ),
    (
        7,
        # Remedies as plans (docs/remedies.md). Each alert's plan, as JSON (NULL for an alert
        # written before plans existed). Every dry run and apply of one, audited: who (an OS
        # user or an API token's digest), when, the plan it ran, each step's outcome, and its
        # outcome (done, not done, refused: the sentence). And the applies running now: one per
        # alert at a time; a row left by a process that died gives way after it expires.
        """
        ALTER TABLE alerts ADD COLUMN plan TEXT;
        CREATE TABLE remedy_runs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            alert_id TEXT NOT NULL,
            cluster TEXT NOT NULL,
            kind TEXT NOT NULL,
            mode TEXT NOT NULL,
            alternative INTEGER NOT NULL,
            actor TEXT NOT NULL,
            started_at BIGINT NOT NULL,
            ended_at BIGINT NOT NULL,
            outcome TEXT NOT NULL,
            refusal TEXT,
            plan TEXT NOT NULL,
            steps TEXT NOT NULL
        );
        CREATE INDEX remedy_runs_by_alert ON remedy_runs (alert_id, seq);
        CREATE TABLE remedy_locks (
            alert_id TEXT PRIMARY KEY,
            actor TEXT NOT NULL,
            started_at BIGINT NOT NULL,
            expires_at BIGINT NOT NULL
        );
        """,
    ),
]
