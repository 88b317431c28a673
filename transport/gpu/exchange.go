package gpu

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
)

// exchanger is an all-gather over a gin window, for what ranks must tell
// each other at creation (where they run, device pointers, CUDA IPC
// handles). gin.Comm has Barrier but no public AllGather yet (proposed:
// func (c *gin.Comm) AllGather(ctx, []byte) ([][]byte, error)); until it
// has, each rank puts its blob into its own slot of every peer's window,
// with a VA signal increment, and waits for size-1 increments per round.
//
// Window layout: size slots of xchgSlot bytes ([len u32][round u32][data]),
// then the 64-bit VA signal word.
type exchanger struct {
	gc    *gin.Comm
	x     *gin.Context
	w     *gin.Window
	round uint64
}

const xchgSlot = 1024

func newExchanger(ctx context.Context, gc *gin.Comm) (*exchanger, error) {
	x, err := gc.Context(0)
	if err != nil {
		return nil, err
	}
	w, err := gc.RegisterWindow(ctx, gc.Size()*xchgSlot+64, gin.StrictOrdering)
	if err != nil {
		return nil, fmt.Errorf("exchange window: %w", err)
	}
	return &exchanger{gc: gc, x: x, w: w}, nil
}

// allGather returns every rank's data by rank. Collective.
func (e *exchanger) allGather(ctx context.Context, data []byte) ([][]byte, error) {
	if len(data) > xchgSlot-8 {
		return nil, fmt.Errorf("exchange %d bytes: at most %d: %w", len(data), xchgSlot-8, ErrBadArgument)
	}
	e.round++
	me, n := e.gc.Rank(), e.gc.Size()
	sigOff := n * xchgSlot
	b := e.w.Bytes()
	mine := b[me*xchgSlot : (me+1)*xchgSlot]
	binary.LittleEndian.PutUint32(mine[0:], uint32(len(data)))
	binary.LittleEndian.PutUint32(mine[4:], uint32(e.round))
	copy(mine[8:], data)
	world := e.gc.World()
	for p := range n {
		if p == me {
			continue
		}
		if err := e.x.Put(world, p, e.w, me*xchgSlot, e.w, me*xchgSlot, 8+len(data), gin.VASignalInc(e.w, sigOff), gin.LocalNone); err != nil {
			return nil, fmt.Errorf("exchange: put to rank %d: %w", p, err)
		}
	}
	if n > 1 {
		if _, err := e.x.WaitSignalVA(ctx, e.w, sigOff, e.round*uint64(n-1), 64); err != nil {
			return nil, fmt.Errorf("exchange round %d: %w", e.round, err)
		}
	}
	out := make([][]byte, n)
	for p := range n {
		s := b[p*xchgSlot : (p+1)*xchgSlot]
		l, r := binary.LittleEndian.Uint32(s), binary.LittleEndian.Uint32(s[4:])
		if uint64(r) != e.round&0xffffffff || int(l) > xchgSlot-8 {
			return nil, fmt.Errorf("exchange round %d: rank %d's slot holds round %d", e.round, p, r)
		}
		out[p] = append([]byte(nil), s[8:8+l]...)
	}
	if err := e.x.Flush(ctx); err != nil {
		return nil, err
	}
	// Nobody writes the next round into a slot before everyone read this one.
	if err := e.gc.Barrier(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *exchanger) allGatherJSON(ctx context.Context, v any) ([][]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return e.allGather(ctx, b)
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func leU64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
