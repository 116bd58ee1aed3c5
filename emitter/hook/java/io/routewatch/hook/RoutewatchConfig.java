package io.routewatch.hook;

import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * Where and how the library writes its events: the RocketMQ cluster its events belong to (the
 * {@code brokerClusterName} of the NameServers the client is configured with; a client cannot
 * learn it from a NameServer that does not know the topic), the spool directory, and the bounds
 * of its buffer.
 *
 * <p>{@link #fromEnvironment()} reads the system properties {@code routewatch.hook.cluster},
 * {@code routewatch.hook.spoolDir} and {@code routewatch.hook.queueCapacity}, or else the
 * environment variables {@code ROUTEWATCH_HOOK_CLUSTER}, {@code ROUTEWATCH_HOOK_SPOOL_DIR} and
 * {@code ROUTEWATCH_HOOK_QUEUE_CAPACITY}. Nothing here throws: with no spool directory every
 * event is dropped and counted, and the drop is logged.
 */
public final class RoutewatchConfig {
    public static final String DEFAULT_CLUSTER = "DefaultCluster";
    public static final int DEFAULT_QUEUE_CAPACITY = 10_000;
    public static final int DEFAULT_ROLL_EVENTS = 1_000;
    public static final long DEFAULT_ROLL_INTERVAL_MS = 1_000;
    public static final long DEFAULT_LOG_INTERVAL_MS = 60_000;

    final String cluster;
    final Path spoolDir;
    final int queueCapacity;
    final int rollEvents;
    final long rollIntervalMs;
    final long logIntervalMs;

    public RoutewatchConfig(String cluster, Path spoolDir) {
        this(cluster, spoolDir, DEFAULT_QUEUE_CAPACITY, DEFAULT_ROLL_EVENTS, DEFAULT_ROLL_INTERVAL_MS,
            DEFAULT_LOG_INTERVAL_MS);
    }

    private RoutewatchConfig(String cluster, Path spoolDir, int queueCapacity, int rollEvents,
            long rollIntervalMs, long logIntervalMs) {
        this.cluster = cluster == null || cluster.isEmpty() ? DEFAULT_CLUSTER : cluster;
        this.spoolDir = spoolDir == null ? null : spoolDir.toAbsolutePath().normalize();
        this.queueCapacity = Math.max(1, queueCapacity);
        this.rollEvents = Math.max(1, rollEvents);
        this.rollIntervalMs = Math.max(1, rollIntervalMs);
        this.logIntervalMs = Math.max(1, logIntervalMs);
    }

    /** The configuration of the system properties, else of the environment (see above). */
    public static RoutewatchConfig fromEnvironment() {
        String spool = setting("routewatch.hook.spoolDir", "ROUTEWATCH_HOOK_SPOOL_DIR");
        int capacity = DEFAULT_QUEUE_CAPACITY;
        String text = setting("routewatch.hook.queueCapacity", "ROUTEWATCH_HOOK_QUEUE_CAPACITY");
        if (text != null) {
            try {
                capacity = Integer.parseInt(text.trim());
            } catch (NumberFormatException e) {
                capacity = DEFAULT_QUEUE_CAPACITY;
            }
        }
        return new RoutewatchConfig(setting("routewatch.hook.cluster", "ROUTEWATCH_HOOK_CLUSTER"),
            spool == null || spool.isEmpty() ? null : Paths.get(spool))
            .withQueueCapacity(capacity);
    }

    private static String setting(String property, String variable) {
        String value = System.getProperty(property);
        return value != null ? value : System.getenv(variable);
    }

    /** At most this many events wait for the writer; more are dropped and counted. */
    public RoutewatchConfig withQueueCapacity(int capacity) {
        return new RoutewatchConfig(cluster, spoolDir, capacity, rollEvents, rollIntervalMs, logIntervalMs);
    }

    /** A spool file is published after this many events or this many milliseconds. */
    public RoutewatchConfig withRoll(int events, long intervalMs) {
        return new RoutewatchConfig(cluster, spoolDir, queueCapacity, events, intervalMs, logIntervalMs);
    }

    /** Drops are logged at most once per this many milliseconds. */
    public RoutewatchConfig withLogInterval(long intervalMs) {
        return new RoutewatchConfig(cluster, spoolDir, queueCapacity, rollEvents, rollIntervalMs, intervalMs);
    }

    public String cluster() {
        return cluster;
    }

    public Path spoolDir() {
        return spoolDir;
    }

    public int queueCapacity() {
        return queueCapacity;
    }
}
