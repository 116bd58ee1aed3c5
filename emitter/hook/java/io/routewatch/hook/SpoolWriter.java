package io.routewatch.hook;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A bounded queue of event lines and one daemon thread that publishes them into the spool
 * directory, in the format routewatch's spool source reads (docs/contract.md, the replayer's
 * {@code SpoolSink}): JSON lines written under a hidden name ({@code .<run>-<n>.tmp}), given a
 * modification time strictly later than the previous file's, then renamed into place as
 * {@code <mtime ns, 20 digits>-<pid>-<run>-<n, 8 digits>.jsonl}; a file is published after
 * {@code rollEvents} events or {@code rollIntervalMs}.
 *
 * <p>{@link #offer} never blocks and never throws: when the queue is full the event is dropped
 * and counted; when a file cannot be written (no spool set, the directory unwritable, the disk
 * full) its events are dropped and counted. Drops are logged at most once per log interval.
 */
public final class SpoolWriter {
    private static final Logger LOG = Logger.getLogger("io.routewatch.hook");
    private static final long POLL_MS = 50;

    private final RoutewatchConfig config;
    private final ArrayBlockingQueue<String> queue;
    private final String run = UUID.randomUUID().toString().replace("-", "").substring(0, 8);
    private final String pid = processId();
    private final Thread thread;

    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong written = new AtomicLong();
    private final AtomicLong droppedQueueFull = new AtomicLong();
    private final AtomicLong droppedUnwritable = new AtomicLong();
    private final AtomicLong files = new AtomicLong();
    private final AtomicLong droppedInWrite = new AtomicLong();  // accepted, then not written
    private volatile String lastError;
    private final Object progress = new Object();  // flush() waits on it, the writer signals it
    private volatile boolean flushRequested;
    private volatile boolean closed;
    private volatile boolean ended;  // the writer thread has left its loop (set before the signal)

    private long lastMtimeNs;
    private long lastLogMs;
    private long droppedAtLastLog;

    SpoolWriter(RoutewatchConfig config) {
        this.config = config;
        this.queue = new ArrayBlockingQueue<>(config.queueCapacity);
        if (config.spoolDir == null) {
            lastError = "no spool directory is set (routewatch.hook.spoolDir or ROUTEWATCH_HOOK_SPOOL_DIR)";
        }
        this.thread = new Thread(this::loop, "routewatch-hook-spool-" + run);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** The process id (Java 8 has no ProcessHandle): the runtime's name is "pid@host". */
    private static String processId() {
        String name = ManagementFactory.getRuntimeMXBean().getName();
        int at = name.indexOf('@');
        String pid = at > 0 ? name.substring(0, at) : "";
        return pid.matches("[0-9]+") ? pid : "0";
    }

    /** Queue one event line; false (and counted) if it was dropped. Never blocks, never throws. */
    boolean offer(String line) {
        if (closed || config.spoolDir == null) {
            droppedUnwritable.incrementAndGet();
            return false;
        }
        if (!queue.offer(line)) {
            droppedQueueFull.incrementAndGet();
            return false;
        }
        accepted.incrementAndGet();
        return true;
    }

    /** Events dropped so far, for any reason. */
    public long dropped() {
        return droppedQueueFull.get() + droppedUnwritable.get();
    }

    /** The counters: accepted, written, dropped (queue full, unwritable) and files published. */
    public Map<String, Long> stats() {
        Map<String, Long> stats = new LinkedHashMap<>();
        stats.put("accepted", accepted.get());
        stats.put("written", written.get());
        stats.put("dropped", dropped());
        stats.put("droppedQueueFull", droppedQueueFull.get());
        stats.put("droppedUnwritable", droppedUnwritable.get());
        stats.put("queued", (long) queue.size());
        stats.put("files", files.get());
        return stats;
    }

    /** Why the last write failed, or null. */
    public String lastError() {
        return lastError;
    }

    /**
     * Publish what is queued now and wait up to {@code timeoutMs} for it; true if every event
     * accepted before the call was written or dropped in that time.
     */
    public boolean flush(long timeoutMs) {
        long target = accepted.get();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        flushRequested = true;
        synchronized (progress) {
            while (written.get() + droppedInWrite.get() < target) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || ended) {
                    return false;
                }
                try {
                    progress.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        return true;
    }

    /** Wake the threads waiting in {@link #flush}: a file was published or dropped, or the writer ended. */
    private void signalProgress() {
        synchronized (progress) {
            progress.notifyAll();
        }
    }

    /** Stop accepting events, publish what is queued (waiting up to {@code timeoutMs}). */
    void close(long timeoutMs) {
        flush(timeoutMs);
        closed = true;
        thread.interrupt();
    }

    private void loop() {
        try {
            write();
        } finally {
            ended = true;
            signalProgress();
        }
    }

    private void write() {
        List<String> pending = new ArrayList<>();
        long openedAt = 0;
        while (!closed || !queue.isEmpty()) {
            try {
                String line = queue.poll(POLL_MS, TimeUnit.MILLISECONDS);
                if (line != null) {
                    if (pending.isEmpty()) {
                        openedAt = System.currentTimeMillis();
                    }
                    pending.add(line);
                    queue.drainTo(pending, config.rollEvents - pending.size());
                }
            } catch (InterruptedException e) {
                if (!closed) {
                    continue;
                }
                queue.drainTo(pending);
            }
            boolean flush = flushRequested && queue.isEmpty();
            if (!pending.isEmpty() && (flush || closed || pending.size() >= config.rollEvents
                    || System.currentTimeMillis() - openedAt >= config.rollIntervalMs)) {
                publish(pending);
                pending.clear();
            }
            if (flush && pending.isEmpty()) {
                flushRequested = false;
            }
            logDrops();
        }
    }

    private void publish(List<String> lines) {
        Path dir = config.spoolDir;
        long number = files.incrementAndGet();
        Path tmp = dir.resolve("." + run + "-" + String.format("%08d", number) + ".tmp");
        try {
            Files.createDirectories(dir);
            try (OutputStream out = Files.newOutputStream(tmp)) {
                StringBuilder text = new StringBuilder(lines.size() * 256);
                for (String line : lines) {
                    text.append(line).append('\n');
                }
                out.write(text.toString().getBytes(StandardCharsets.UTF_8));
            }
            long mtime = Math.max(System.currentTimeMillis() * 1_000_000L, lastMtimeNs + 1_000_000L);
            Files.setLastModifiedTime(tmp, FileTime.from(mtime, TimeUnit.NANOSECONDS));
            String name = String.format("%020d-%s-%s-%08d.jsonl", mtime, pid, run, number);
            Files.move(tmp, dir.resolve(name), StandardCopyOption.ATOMIC_MOVE);
            lastMtimeNs = mtime;
            written.addAndGet(lines.size());
        } catch (IOException | RuntimeException e) {
            files.decrementAndGet();
            droppedUnwritable.addAndGet(lines.size());
            droppedInWrite.addAndGet(lines.size());
            lastError = "cannot write to the spool directory " + dir + ": " + e;
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException | RuntimeException ignored) {
                // the directory is gone or unwritable: nothing was left in it
            }
        } finally {
            signalProgress();
        }
    }

    private void logDrops() {
        long now = System.currentTimeMillis();
        if (now - lastLogMs < config.logIntervalMs) {
            return;
        }
        long dropped = dropped();
        if (dropped == droppedAtLastLog) {
            return;
        }
        LOG.log(Level.WARNING, String.format(
            "routewatch hook: dropped %d route events since the last report (%d in all: %d with the queue"
                + " full, %d unwritable); the application is not affected. Last error: %s",
            dropped - droppedAtLastLog, dropped, droppedQueueFull.get(), droppedUnwritable.get(), lastError));
        droppedAtLastLog = dropped;
        lastLogMs = now;
    }
}
