package leasehold

import "hash/fnv"

// MaxBuckets is the largest bucket count of a sharded group.
const MaxBuckets = 4096

// BucketOf is the bucket of key among buckets (1 to MaxBuckets): FNV-1a 64 of the key's UTF-8
// bytes, then the jump consistent hash of Lamping and Veach (2014). The same function as the
// TypeScript library's bucketOf, with the test vectors of docs/sharding.md. It panics on a count
// outside 1 to MaxBuckets, a programming error.
func BucketOf(key string, buckets int) int {
	if buckets < 1 || buckets > MaxBuckets {
		panic("leasehold.BucketOf: buckets must be 1 to 4096")
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	k := h.Sum64()
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		k = k*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((k>>33)+1)))
	}
	return int(b)
}
