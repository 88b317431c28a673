package barrier

// Option configures a session at creation.
type Option func(*options)

type options struct {
	epoch    uint64
	hasEpoch bool
	pacing   Pacing
}

// WithEpoch starts the session's epochs at e instead of 0, as if e
// barriers had completed on its slots. Collective and for fresh slots
// only: every rank of the team passes the same e, and the slots' signals
// and shadows must still be 0 (a new Comm, or ResetSignal on every slot
// while no peer signals them); NewSession fails with gin.ErrBadArgument
// otherwise. The session adds e to this rank's slot at every peer and to
// its own shadows (SignalAdd: see "Signal mode" in the package doc), and
// its first Sync compares all 64 bits, so an arrival that overtakes a
// peer's +e cannot pass early.
//
// It exists so that tests can run epochs across the 32-bit wraparound of
// the slots (e near 1<<32) without 2^32 barriers.
func WithEpoch(e uint64) Option { return func(o *options) { o.epoch, o.hasEpoch = e, true } }

// WithPacing sets how Sync waits (see Pacing); the default is gin's
// WaitSignal with the Comm's gin.Config.Idle.
func WithPacing(p Pacing) Option { return func(o *options) { o.pacing = p } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}
