/**
 * The peer a user would otherwise pick: etcd's election recipe through the `etcd3` npm client.
 * Two clients (two "processes") campaign on one election; the leader resigns and we time until the
 * other's campaign reports `elected`. etcd pushes the deletion of the leader's key to the waiting
 * candidate over a watch, so this is a push-based handover.
 */
import { Etcd3 } from "etcd3";
import { within } from "./common.js";

/** One handover per election name; resolves the samples (ms from resign() call to elected). */
export async function etcdHandovers(endpoint: string, count: number, ttlSeconds: number): Promise<number[]> {
  return (await etcdHandoverHops(endpoint, count, ttlSeconds)).map((s) => s.elected);
}

/** ms from the resign() call to its answer, and to the follower's elected event. */
export interface EtcdHandover {
  acknowledged: number;
  elected: number;
}

/** One handover per election name, one after another. */
export async function etcdHandoverHops(endpoint: string, count: number, ttlSeconds: number): Promise<EtcdHandover[]> {
  const leaderClient = new Etcd3({ hosts: endpoint });
  const followerClient = new Etcd3({ hosts: endpoint });
  const samples: EtcdHandover[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const name = `handover-${Date.now().toString(36)}-${i}`;
      const leader = leaderClient.election(name, ttlSeconds).campaign("a");
      await leader.wait();
      const follower = followerClient.election(name, ttlSeconds).campaign("b");
      const elected = new Promise<number>((resolve) => follower.on("elected", () => resolve(performance.now())));
      // Let the follower's campaign reach etcd and start waiting on the leader's key.
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
      const t0 = performance.now();
      await leader.resign();
      const acknowledged = performance.now() - t0;
      const at = await within(elected, 10_000);
      if (at !== undefined) samples.push({ acknowledged, elected: at - t0 });
      await follower.resign();
    }
  } finally {
    leaderClient.close();
    followerClient.close();
  }
  return samples;
}
