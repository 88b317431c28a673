// Package mailbox is rdmactor's remote mailbox: for every (receiver,
// sender) pair of a gin.Comm, an inbox ring in a window of the receiver
// that the sender fills with one-sided puts, a signal at the receiver that
// counts the sender's frames, and a credit signal at the sender through
// which the receiver hands consumed ring space back (docs/actors.md). It
// carries opaque frames; package actor puts protoactor-go messages in them.
//
// # Usage
//
//	m, err := mailbox.New(ctx, comm, mailbox.Config{})   // collective
//	m.Start(mailbox.Handler{Frame: func(from int, kind mailbox.Kind, body []byte) {
//		// runs on the receive loop; body is valid until return
//	}})
//	err = m.Send(peer, 1, body)                            // any goroutine
//	...
//	m.Close()
//
// Caller duties:
//
//  1. New is collective: every rank calls it with an equal Config, in the
//     same order as its other collectives on the Comm.
//  2. The signals SignalBase .. SignalBase+2×Size-1 belong to the mailbox
//     (mailbox.SignalsNeeded); nothing else may signal them.
//  3. A Handler.Frame must copy or decode body before it returns, and must
//     not wait for anything that needs ring credit from a peer (for
//     example a Send that may block): a peer's receive loop may be
//     waiting on this one. Use TrySend from the receive loop.
//  4. Ranks must not Close while peers still send to them if those frames
//     matter: Close puts what this rank staged but does not drain its
//     inbox (barrier first).
//
// # Frames and rings
//
// A frame is a 16-byte header (length, magic, kind, sequence number,
// CRC-32C of the header; see frame.go) and a body, 8-byte aligned. A
// sender stages frames in its staging copy of the ring (its own window, at
// the offset the frame will have at the receiver: see Layout) and puts
// them at its ring tail in the receiver's inbox, with SignalAdd of the
// number of frames the put carries on its frame signal there. A frame
// that would cross the ring's end is placed at the start of the next lap;
// the bytes left are a pad (with a pad header when there is room for one).
// Frames over Config.MaxFrame (at most RingBytes/4) are an error at Send:
// the mailbox does not chunk.
//
// Signals are strong (gin.Context.Put): when the receive loop reads a
// frame count, the data of those frames, and of every pad before them, is
// visible. The receive loop polls every sender's frame signal, hands each
// frame to Handler.Frame in order, and blocks in gin until a frame comes
// when nothing came (see Idle below).
//
// # Credit
//
// The receiver adds the bytes it consumed (frames and pads) to the
// sender's credit signal with SignalAdd, once at least RingBytes/4 are
// unreturned. The sender reads that signal with acquire ordering before
// each frame and stages a frame only while tail + frame - consumed fits
// in the ring: nothing is ever overwritten. A Send that finds no room
// waits, holding no lock, for up to Config.SendTimeout and then returns a
// *RingFullError; frames accepted before stay queued and arrive.
//
// A waiting sender never waits for credit the receiver holds back: a
// frame with its pad needs at most 2 × MaxFrame <= RingBytes/2, so a
// blocked sender has more than RingBytes/2 uncredited, and a receiver
// that consumed everything put returns credit at RingBytes/4
// (TestRingModel checks this against a model). Credit is a count of
// bytes, not an offset, so a receiver's returns may be late or batched
// but never wrong. Staging bytes are reused only a lap after their frame
// was consumed, so puts need no Flush on asynchronous providers either.
//
// A handler that cannot take a frame now calls Hold: the frame stays in
// the ring, the loop reads nothing more from that sender and returns it
// no credit, so its Sends wait and then fail with ErrRingFull; Resume
// hands the same frame over again. Other senders' frames keep flowing.
//
// # Batching
//
// A frame that finds its pair idle is put at once (the latency path).
// Frames sent in a burst, or by several goroutines at once, are put
// several per put by the goroutine already putting for that pair or by
// the mailbox's writer goroutine; see Send and Config.BatchGap.
//
// # Idle
//
// With nothing to read, the receive loop blocks in one gin.WaitSignals on
// every open pair's frame signal: gin spins briefly, then sleeps in the
// provider (a futex on the shm doorbell, the CQ's wait fd on ofi) until a
// put reaches any of them, so an idle rank costs no CPU and a frame wakes
// it at once. Two cases keep it awake instead (polling, yielding now and
// then): traffic that recurs within Config.Linger of the last frame, so
// that the next one does not pay a blocked thread's wake-up; and Expect,
// which package actor calls after sending a request, so that the answer
// finds the loop running. Neither applies on an oversubscribed host
// (gin.Comm.Oversubscribed), where the awake loop would take the processor
// a peer needs. An awake loop calls Handler.Warm every Config.WarmEvery,
// so that the handler can keep the code of the next frame in the caches.
// docs/actors.md (Idle behaviour) has the figures.
//
// # Bad input
//
// A ring that holds, where the next frame must be, bytes that are not a
// valid frame (magic, checksum, sequence number, length within MaxFrame
// and within the lap, pad to the ring's end) is corrupt: the receive loop
// reports a *FrameError (ErrCorruptFrame) to Handler.Error, closes that
// pair (it reads nothing more from it; bit 63 of the sender's credit
// signal tells the sender, whose next Send returns ErrPairClosed) and goes
// on with the other senders. Resynchronising inside a ring whose framing
// is lost would guess; closing the pair is the clean end. A frame that is
// well formed but whose body the layer above cannot use is that layer's
// to report (package actor drops it, reports it, and goes on with the next
// frame).
//
// # Memory
//
// Each rank registers one window of 2 × Size × RingBytes: Size inbox
// rings and Size staging rings. At the default 1 MiB per pair that is
// 8 MiB per rank for 4 ranks and 128 MiB for 64; on shm a host with N
// ranks holds 2 × N² × RingBytes of shared files in all, of which pages
// are only touched, and so only allocated, for pairs that carry traffic.
// Lower RingBytes for large jobs; it must exceed 4 × the largest frame.
//
// # What it does not promise
//
// Order holds per (sender, receiver) pair only, and per sending
// goroutine: frames of different senders, or of two goroutines of one
// sender, interleave in whatever order their Sends take effect. Delivery
// holds while the Comm works: once gin reports a lost rank, every put and
// signal read fails, the receive loop ends with that error (Err,
// Handler.Error) and staged frames are lost. Close is local and does not
// drain the inbox.
//
// Mailbox is safe for concurrent use. Lock order: a pair's send lock is
// never held across a put, a wait, or another pair's lock.
package mailbox
