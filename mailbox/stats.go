package mailbox

import "sync/atomic"

// Stats are a mailbox's counters since New. Sent and received counts are
// frames and body bytes (headers and pads excluded).
type Stats struct {
	FramesSent, BytesSent uint64
	// Puts counts the puts that carried them (with pads): fewer than
	// FramesSent when bursts were batched.
	Puts uint64
	// FramesReceived and BytesReceived count frames handed to
	// Handler.Frame and not held (Hold); a frame is counted before its
	// handler runs, so a handler that has seen it also sees it counted.
	FramesReceived, BytesReceived uint64
	// CreditWaits counts Sends that found the ring full and waited;
	// RingFull counts those that gave up (RingFullError).
	CreditWaits, RingFull uint64
	// CreditsReturned counts credit signals sent to senders.
	CreditsReturned uint64
	// CorruptFrames counts pairs closed for a corrupt frame.
	CorruptFrames uint64
	// HandlerPanics counts frames whose Handler.Frame panicked, and calls
	// of Handler.Warm that panicked.
	HandlerPanics uint64
	// Waits counts the receive loop's waits for frames (each spins, then
	// blocks in the provider); the loop does not wait while it lingers
	// (Config.Linger) or expects an answer (Expect).
	Waits uint64
	// Holds counts the frames Handler.Frame held back (Hold): each Hold
	// of a frame handed over again after Resume counts once more.
	Holds uint64
	// Warms counts the calls of Handler.Warm (Config.WarmEvery).
	Warms uint64
}

// sendCounters are one pair's send-side Stats, guarded by its lock (so
// senders to different peers share no counter cache line).
type sendCounters struct {
	frames, bytes, puts, creditWaits, ringFull uint64
}

// recvCounters are the receive-side Stats: written only by the receive
// loop, read by Stats.
type recvCounters struct {
	frames, bytes, creditsReturned, corruptFrames, handlerPanics, waits, holds, warms atomic.Uint64
}
