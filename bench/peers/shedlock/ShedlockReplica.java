/*
 * One replica of a ShedLock-guarded job (ShedLock 6.3.0, plain JDBC provider, on SQLite), firing every
 * second as Spring's @Scheduled(cron = "* * * * * *") with @SchedulerLock does: one scheduler
 * thread wakes at each whole second of this JVM's clock, calls the task through
 * DefaultLockingTaskExecutor with LockConfiguration(now, name, lockAtMostFor, lockAtLeastFor), and
 * computes the next fire after the later of the fire and the task's end (a long run skips fires).
 * The clock is shifted by skewMs (ClockProvider.setClock and the trigger alike): an in-process skew.
 *
 *   java -cp <classpath> ShedlockReplica <db file> <lock name> <identity> <skewMs> <atMostMs> <atLeastMs> <workMs> <log>
 *
 * The task appends the fire-writer lines (test/support/fire-writer.ts) to <log>: "start", a "tick"
 * every 20 ms, "end", each "<term> <System.nanoTime()> <identity> <fire ISO> <pid> <ppid> <event>";
 * ShedLock has no term, so 0. nanoTime is CLOCK_MONOTONIC on Linux, the clock the bench reads.
 */
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.provider.jdbc.JdbcLockProvider;
import org.sqlite.SQLiteConfig;
import org.sqlite.SQLiteDataSource;

public final class ShedlockReplica {
  private static Path log;
  private static String identity;
  private static final long PID = ProcessHandle.current().pid();
  private static final long PPID = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(0L);

  private static synchronized void line(Instant fire, String event) {
    String text = "0 " + System.nanoTime() + " " + identity + " " + fire + " " + PID + " " + PPID + " " + event + "\n";
    try {
      Files.write(log, text.getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (Exception e) {
      throw new RuntimeException(e);
    }
  }

  public static void main(String[] args) throws Exception {
    String db = args[0];
    String name = args[1];
    identity = args[2];
    Clock clock = Clock.offset(Clock.systemUTC(), Duration.ofMillis(Long.parseLong(args[3])));
    Duration atMost = Duration.ofMillis(Long.parseLong(args[4]));
    Duration atLeast = Duration.ofMillis(Long.parseLong(args[5]));
    long workMs = Long.parseLong(args[6]);
    log = Path.of(args[7]);
    ClockProvider.setClock(clock);

    SQLiteConfig config = new SQLiteConfig();
    config.setBusyTimeout(5000);
    config.setJournalMode(SQLiteConfig.JournalMode.WAL);
    SQLiteDataSource ds = new SQLiteDataSource(config);
    ds.setUrl("jdbc:sqlite:" + db);
    try (Connection c = ds.getConnection()) {
      c.createStatement().execute(
          "CREATE TABLE IF NOT EXISTS shedlock(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL,"
              + " locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))");
    }
    LockingTaskExecutor executor = new DefaultLockingTaskExecutor(new JdbcLockProvider(ds));
    System.out.println("ready");
    System.out.flush();

    Instant next = clock.instant().truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
    for (;;) {
      long waitMs = Duration.between(clock.instant(), next).toMillis();
      if (waitMs > 0) Thread.sleep(waitMs);
      Instant fire = next;
      try {
        executor.executeWithLock(
            (Runnable) () -> {
              line(fire, "start");
              long end = System.nanoTime() + workMs * 1_000_000L;
              while (System.nanoTime() < end) {
                try {
                  Thread.sleep(Math.min(20, Math.max(1, (end - System.nanoTime()) / 1_000_000L)));
                } catch (InterruptedException e) {
                  return;
                }
                line(fire, "tick");
              }
              line(fire, "end");
            },
            new LockConfiguration(ClockProvider.now(), name, atMost, atLeast));
      } catch (Exception e) {
        System.err.println("lock failed: " + e);
      }
      Instant done = clock.instant();
      Instant after = done.isAfter(fire) ? done : fire;
      next = after.truncatedTo(ChronoUnit.SECONDS).plusSeconds(1);
    }
  }
}
