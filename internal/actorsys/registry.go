package actorsys

import (
	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
)

// registryBuckets is how many concurrent maps (of 32 shards each) a
// system's process registry spreads its local PIDs over. protoactor-go
// makes 1,024 (NewProcessRegistry, protoactor-go 2024-08): 32,768 Go maps,
// about 2 MB of pointers that the garbage collector scans in every cycle,
// for each actor system of a rank; a rank that receives large messages
// collects about once per message. 16 keep lookups spread over 512 shards.
const registryBuckets = 16

// compactRegistry gives sys a process registry of registryBuckets buckets
// holding the PIDs its constructor registered. It must run before sys is
// shared with another goroutine.
func compactRegistry(sys *actor.ActorSystem) {
	old := sys.ProcessRegistry.LocalPIDs
	sm := &actor.SliceMap{LocalPIDs: make([]cmap.ConcurrentMap, registryBuckets)}
	for i := range sm.LocalPIDs {
		sm.LocalPIDs[i] = cmap.New()
	}
	for _, b := range old.LocalPIDs {
		for id, p := range b.Items() {
			sm.GetBucket(id).Set(id, p)
		}
	}
	sys.ProcessRegistry.LocalPIDs = sm
}
