// polysandbox's in-runner measurement for the JUnit Platform: one JSON line per test.
//
// A TestExecutionListener the launcher finds by ServiceLoader (META-INF/services beside this
// file, with this directory on the launcher's -cp). For each leaf test (TestIdentifier.isTest())
// it reads the kernel's counters for the JVM process when the test starts (before its
// @BeforeEach methods) and when it finishes (after its @AfterEach methods), and writes one line
// to the file named by POLYSANDBOX_MEASURE (the host's FIFO):
//
//   {"test": NAME, "wall_s": ..., "cpu_user_s": ..., "cpu_system_s": ..., "memory_peak_bytes": ...,
//    "method": "in-runner", "cpu_clock": "process-less-jvm", "memory": "vmhwm"}
//
// NAME is classname + "." + name as the legacy XML reporter writes them (LegacyReportingUtils'
// class name, the identifier's legacy reporting name). CPU: utime and stime of /proc/self/stat
// (every thread of the JVM, those that ended too; in clock ticks of 10 ms) less what the JVM's
// own service threads used meanwhile, each read from /proc/self/task/TID/stat by its name: the
// JIT compilers', the garbage collectors' and the VM thread's, whose work lands on whichever
// test runs when they get a core ("cpu_clock": "process-less-jvm"; a test's own threads, its
// children's aside, are counted). Wall: System.nanoTime(). Memory: VmHWM of /proc/self/status
// after writing "5" to /proc/self/clear_refs at the test's start.
//
// Without POLYSANDBOX_MEASURE it does nothing; its own failures are swallowed: it never changes a
// test's outcome, the launcher's output or its reports. The code under test runs in the same JVM
// and can distort these numbers: they are measurements, not verdicts.

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.reporting.legacy.LegacyReportingUtils;

public class PolysandboxMeasure implements TestExecutionListener {
    /** USER_HZ: the unit of /proc/self/stat's times (100 on every architecture Linux runs here). */
    private static final long TICK_US = 10000;

    private final String path;
    private volatile TestPlan plan;
    private final Map<String, long[]> started = new ConcurrentHashMap<>();
    private final Map<String, Map<Integer, long[]>> startedService = new ConcurrentHashMap<>();
    private final Object lock = new Object();
    private OutputStream out;
    private boolean broken;

    public PolysandboxMeasure() {
        String p = null;
        try {
            p = System.getenv("POLYSANDBOX_MEASURE");
            if (p != null && !p.isEmpty()) {
                p = new java.io.File(p).getAbsolutePath();
            } else {
                p = null;
            }
        } catch (Throwable t) {
            p = null;
        }
        path = p;
    }

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        plan = testPlan;
    }

    @Override
    public void executionStarted(TestIdentifier id) {
        if (path == null) {
            return;
        }
        try {
            if (!id.isTest()) {
                return;
            }
            long reset = resetPeak() ? 1 : 0;
            Map<Integer, long[]> service = serviceTicks();
            long[] cpu = cpuTicks();
            if (cpu == null) {
                return;
            }
            startedService.put(id.getUniqueId(), service);
            started.put(id.getUniqueId(), new long[] {reset, System.nanoTime(), cpu[0], cpu[1]});
        } catch (Throwable t) {
            // never the test's business
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (path == null) {
            return;
        }
        try {
            if (!id.isTest()) {
                return;
            }
            long wall1 = System.nanoTime();
            long[] cpu = cpuTicks();
            Map<Integer, long[]> service = serviceTicks();
            long[] start = started.remove(id.getUniqueId());
            Map<Integer, long[]> serviceStart = startedService.remove(id.getUniqueId());
            if (start == null || cpu == null) {
                return;
            }
            // What the service threads alive at the end used since the start (a thread made
            // meanwhile, from 0; one that ended meanwhile stays in the test's figure).
            long serviceUser = 0;
            long serviceSystem = 0;
            if (serviceStart != null) {
                for (Map.Entry<Integer, long[]> e : service.entrySet()) {
                    long[] was = serviceStart.get(e.getKey());
                    serviceUser += Math.max(0, e.getValue()[0] - (was == null ? 0 : was[0]));
                    serviceSystem += Math.max(0, e.getValue()[1] - (was == null ? 0 : was[1]));
                }
            }
            cpu[0] = Math.max(start[2], cpu[0] - serviceUser);
            cpu[1] = Math.max(start[3], cpu[1] - serviceSystem);
            long peak = vmhwmBytes();
            if (peak < 0) {
                return;
            }
            StringBuilder b = new StringBuilder(256);
            b.append("{\"test\": ");
            quote(b, name(id));
            seconds(b.append(", \"wall_s\": "), (wall1 - start[1]) / 1000);
            seconds(b.append(", \"cpu_user_s\": "), (cpu[0] - start[2]) * TICK_US);
            seconds(b.append(", \"cpu_system_s\": "), (cpu[1] - start[3]) * TICK_US);
            b.append(", \"memory_peak_bytes\": ").append(peak);
            b.append(", \"method\": \"in-runner\", \"cpu_clock\": \"process-less-jvm\", \"memory\": ");
            b.append(start[0] == 1 ? "\"vmhwm\"" : "\"vmhwm-unreset\"").append("}\n");
            write(b.toString().getBytes(StandardCharsets.US_ASCII));
        } catch (Throwable t) {
            // never the test's business
        }
    }

    /** classname + "." + name, as the legacy XML reporter writes the testcase. */
    private String name(TestIdentifier id) {
        String name = id.getLegacyReportingName();
        String cls = null;
        TestPlan p = plan;
        if (p != null) {
            try {
                cls = LegacyReportingUtils.getClassName(p, id);
            } catch (Throwable t) {
                cls = null;
            }
        }
        // (StringBuilder, not +: javac's string concatenation bootstraps at run time.)
        return cls == null || cls.isEmpty() ? name : new StringBuilder(cls).append('.').append(name).toString();
    }

    /** Seconds with six decimals (no String.format: its machinery is slow to load). */
    private static StringBuilder seconds(StringBuilder b, long micros) {
        if (micros < 0) {
            micros = 0;
        }
        String frac = Long.toString(1000000 + micros % 1000000);
        return b.append(micros / 1000000).append('.').append(frac, 1, 7);
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                String hex = Integer.toHexString(0x10000 | c);
                b.append("\\u").append(hex, 1, 5);
            } else {
                b.append(c);
            }
        }
        b.append('"');
    }

    private static boolean resetPeak() {
        try (FileOutputStream f = new FileOutputStream("/proc/self/clear_refs")) {
            f.write('5');
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    /** A /proc file's bytes (one read: these are small). */
    private static int readProc(String file, byte[] buf) throws IOException {
        try (FileInputStream in = new FileInputStream(file)) {
            int n = 0;
            int r;
            while (n < buf.length && (r = in.read(buf, n, buf.length - n)) > 0) {
                n += r;
            }
            return n;
        }
    }

    /** The decimal number at buf[i] (after any spaces or tabs), or -1. */
    private static long number(byte[] buf, int i, int n) {
        while (i < n && (buf[i] == ' ' || buf[i] == '\t')) {
            i++;
        }
        long v = -1;
        for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) {
            v = (v < 0 ? 0 : v * 10) + (buf[i] - '0');
        }
        return v;
    }

    /** The JVM's own service threads, by the name the JVM gives them (15 bytes at most). */
    private static final String[] SERVICE = {
        "C1 CompilerThre", "C2 CompilerThre", "GC Thread#", "G1 ", "VM Thread", "VM Periodic Tas",
        "Sweeper thread", "Monitor Deflati",
    };

    /** utime and stime of each of the JVM's service threads, by thread id (empty without /proc). */
    private static Map<Integer, long[]> serviceTicks() {
        Map<Integer, long[]> ticks = new HashMap<>();
        try {
            String[] tids = new java.io.File("/proc/self/task").list();
            if (tids == null) {
                return ticks;
            }
            byte[] buf = new byte[1024];
            for (String tid : tids) {
                try {
                    String file = new StringBuilder("/proc/self/task/").append(tid).append("/stat").toString();
                    int n = readProc(file, buf);
                    int open = 0;
                    while (open < n && buf[open] != '(') {
                        open++;
                    }
                    int close = n - 1;
                    while (close > open && buf[close] != ')') {
                        close--;
                    }
                    if (close <= open) {
                        continue;
                    }
                    String comm = new String(buf, open + 1, close - open - 1, StandardCharsets.ISO_8859_1);
                    boolean service = false;
                    for (String prefix : SERVICE) {
                        service |= comm.startsWith(prefix);
                    }
                    if (!service) {
                        continue;
                    }
                    long[] t = statTimes(buf, n);
                    if (t != null) {
                        ticks.put(Integer.valueOf(tid), t);
                    }
                } catch (Throwable t) {
                    // the thread ended meanwhile
                }
            }
        } catch (Throwable t) {
            // no /proc
        }
        return ticks;
    }

    /** utime and stime (fields 14 and 15 of /proc/self/stat), in clock ticks. */
    private static long[] cpuTicks() {
        try {
            byte[] buf = new byte[1024];
            return statTimes(buf, readProc("/proc/self/stat", buf));
        } catch (Throwable t) {
            return null;
        }
    }

    /** utime and stime (fields 14 and 15) of a stat file's n bytes in buf. */
    private static long[] statTimes(byte[] buf, int n) {
        // The command name (field 2) may hold spaces and parentheses: count from its end.
        int i = n - 1;
        while (i >= 0 && buf[i] != ')') {
            i--;
        }
        if (i < 0) {
            return null;
        }
        // ") S ppid ...": field 3 starts at i + 2; utime is field 14, 11 spaces further.
        i += 2;
        for (int field = 3; field < 14 && i < n; i++) {
            if (buf[i] == ' ') {
                field++;
            }
        }
        long utime = number(buf, i, n);
        while (i < n && buf[i] != ' ') {
            i++;
        }
        long stime = number(buf, i, n);
        return utime < 0 || stime < 0 ? null : new long[] {utime, stime};
    }

    private static final byte[] VMHWM = {'\n', 'V', 'm', 'H', 'W', 'M', ':'};

    private static long vmhwmBytes() {
        try {
            byte[] buf = new byte[8192];
            int n = readProc("/proc/self/status", buf);
            outer:
            for (int i = 0; i + VMHWM.length <= n; i++) {
                for (int k = 0; k < VMHWM.length; k++) {
                    if (buf[i + k] != VMHWM[k]) {
                        continue outer;
                    }
                }
                long kb = number(buf, i + VMHWM.length, n);
                return kb < 0 ? -1 : kb * 1024;
            }
        } catch (Throwable t) {
            // no /proc
        }
        return -1;
    }

    /** One write(2) per line; the file is opened once, off the test's thread when it would block. */
    private void write(byte[] line) {
        if (line.length >= 4096) {
            return;
        }
        synchronized (lock) {
            if (broken) {
                return;
            }
            try {
                if (out == null) {
                    out = open(path);
                    if (out == null) {
                        broken = true;
                        return;
                    }
                }
                out.write(line);
            } catch (Throwable t) {
                broken = true;
            }
        }
    }

    /**
     * Opens the FIFO for appending. Opening a FIFO for writing blocks until a reader opens it: a
     * daemon thread does it, given two seconds (the host reads from before the sandbox starts).
     */
    private static OutputStream open(String path) throws InterruptedException {
        Opener t = new Opener(path);
        t.setDaemon(true);
        t.start();
        t.join(2000);
        synchronized (t) {
            t.late = true;
            return t.out;
        }
    }

    /** (A class, not a lambda: a lambda's bootstrap costs the JVM tens of milliseconds.) */
    private static final class Opener extends Thread {
        private final String path;
        private OutputStream out;
        private boolean late;

        Opener(String path) {
            super("polysandbox-measure-open");
            this.path = path;
        }

        @Override
        public void run() {
            try {
                FileOutputStream f = new FileOutputStream(path, true);
                synchronized (this) {
                    if (!late) {
                        out = f;
                        return;
                    }
                }
                f.close();
            } catch (IOException e) {
                // nothing to write to
            }
        }
    }
}
