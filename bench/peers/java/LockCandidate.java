/*
 * One candidate of the awslabs DynamoDB lock client (1.3.0), as its README uses it: a lease of
 * leaseMs with a background heartbeat, and a blocking acquireLock that polls the item every
 * refreshMs until the lock is free or its observed lease ran out. For bench/follower-reads.
 *
 *   java -cp <classpath> LockCandidate <endpoint> <table> <key> <owner> <leaseMs> <heartbeatMs> <refreshMs>
 *
 * Prints one JSON line per step, stamped with System.nanoTime() (CLOCK_MONOTONIC on Linux, the
 * clock the bench reads with process.hrtime): {"event":"waiting"|"acquired"|"released","at":"<ns>"}.
 * SIGTERM releases the lock (a graceful handover); SIGKILL is the crash.
 */
import com.amazonaws.services.dynamodbv2.AcquireLockOptions;
import com.amazonaws.services.dynamodbv2.AmazonDynamoDBLockClient;
import com.amazonaws.services.dynamodbv2.AmazonDynamoDBLockClientOptions;
import com.amazonaws.services.dynamodbv2.LockItem;
import java.net.URI;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

public final class LockCandidate {
  private static volatile LockItem held;

  private static void say(String event) {
    System.out.println("{\"event\":\"" + event + "\",\"at\":\"" + System.nanoTime() + "\"}");
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    DynamoDbClient dynamo = DynamoDbClient.builder()
        .endpointOverride(URI.create(args[0]))
        .region(Region.US_EAST_1)
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("leasehold-test", "leasehold-test")))
        .build();
    AmazonDynamoDBLockClient client = new AmazonDynamoDBLockClient(
        AmazonDynamoDBLockClientOptions.builder(dynamo, args[1])
            .withOwnerName(args[3])
            .withLeaseDuration(Long.parseLong(args[4]))
            .withHeartbeatPeriod(Long.parseLong(args[5]))
            .withTimeUnit(TimeUnit.MILLISECONDS)
            .withCreateHeartbeatBackgroundThread(true)
            .build());
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      LockItem lock = held;
      if (lock != null && client.releaseLock(lock)) say("released");
    }));
    say("waiting");
    held = client.acquireLock(AcquireLockOptions.builder(args[2])
        .withRefreshPeriod(Long.parseLong(args[6]))
        .withAdditionalTimeToWaitForLock(Long.MAX_VALUE / 4)
        .withTimeUnit(TimeUnit.MILLISECONDS)
        .build());
    say("acquired");
    Thread.sleep(Long.MAX_VALUE);
  }
}
