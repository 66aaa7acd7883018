// The JDK's ScheduledThreadPoolExecutor as a peer of benches/precision.rs
// (issue 25): the same timers, due at the same offsets, each recording how
// late it ran on the pool's thread.
//
// Usage: java StpePrecision THREADS LEAD_NS WARMUP, then the offsets in ns
// on stdin, one per line. A warm-up run of the first WARMUP offsets (scaled
// into a tenth of the time) runs first, so the measured run finds the JIT's
// code compiled, as a long-lived service would.
//
// Prints three lines: "cpu_ns wakeups span_ns", then every timer's lateness
// in ns on one line, space-separated (negative: early). CPU is the whole
// JVM's (every thread: the pool, the JIT, the collector) from the first
// schedule to the last fire; wake-ups are the pool threads' voluntary
// context switches over the same time (each is a park that ended).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class StpePrecision {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        long lead = Long.parseLong(args[1]);
        int warmup = Integer.parseInt(args[2]);
        List<Long> read = new ArrayList<>();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.isEmpty()) {
                    read.add(Long.parseLong(line.trim()));
                }
            }
        }
        long[] offsets = new long[read.size()];
        for (int i = 0; i < offsets.length; i++) {
            offsets[i] = read.get(i);
        }
        ScheduledThreadPoolExecutor pool = new ScheduledThreadPoolExecutor(threads, r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        pool.prestartAllCoreThreads();
        long[] small = new long[Math.min(warmup, offsets.length)];
        for (int i = 0; i < small.length; i++) {
            small[i] = offsets[i] / 10;
        }
        run(pool, small, lead, new long[small.length]);

        long[] late = new long[offsets.length];
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long switchesBefore = switches(pool, threads);
        long cpuBefore = os.getProcessCpuTime();
        long begin = System.nanoTime();
        long last = run(pool, offsets, lead, late);
        long cpu = os.getProcessCpuTime() - cpuBefore;
        long switchesAfter = switches(pool, threads);
        StringBuilder out = new StringBuilder(offsets.length * 8);
        out.append(cpu).append(' ').append(switchesAfter - switchesBefore).append(' ')
                .append(last - begin).append('\n');
        for (int i = 0; i < late.length; i++) {
            if (i > 0) {
                out.append(' ');
            }
            out.append(late[i]);
        }
        out.append('\n');
        System.out.print(out);
        System.out.flush();
        pool.shutdownNow();
    }

    // Schedules every offset from `lead` after now; waits for the last fire
    // and answers its time.
    static long run(ScheduledThreadPoolExecutor pool, long[] offsets, long lead, long[] late)
            throws InterruptedException {
        CountDownLatch done = new CountDownLatch(offsets.length);
        AtomicLong last = new AtomicLong();
        long start = System.nanoTime() + lead;
        for (int i = 0; i < offsets.length; i++) {
            final int id = i;
            final long deadline = start + offsets[i];
            pool.schedule(() -> {
                long now = System.nanoTime();
                late[id] = now - deadline;
                last.accumulateAndGet(now, Math::max);
                done.countDown();
            }, deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        }
        done.await();
        return last.get();
    }

    // The sum of every pool thread's voluntary context switches, read on
    // each of them (a task per thread, all held until all have read).
    static long switches(ScheduledThreadPoolExecutor pool, int threads) throws InterruptedException {
        AtomicLong sum = new AtomicLong();
        CountDownLatch read = new CountDownLatch(threads);
        CountDownLatch hold = new CountDownLatch(1);
        for (int i = 0; i < threads; i++) {
            pool.execute(() -> {
                try {
                    for (String line : Files.readAllLines(Path.of("/proc/thread-self/status"))) {
                        if (line.startsWith("voluntary_ctxt_switches:")) {
                            sum.addAndGet(Long.parseLong(line.substring(24).trim()));
                        }
                    }
                } catch (Exception e) {
                    // No /proc (not Linux): the count stays 0.
                }
                read.countDown();
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        read.await();
        hold.countDown();
        return sum.get();
    }
}
