package gpu

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
)

// allGatherJSON is gin's control-plane all-gather (gin.Comm.AllGather) of
// v as JSON: what ranks tell each other at creation (where they run,
// device pointers, CUDA IPC handles, votes). Collective.
func allGatherJSON(ctx context.Context, gc *gin.Comm, v any) ([][]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	all, err := gc.AllGather(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("exchange: %w", err)
	}
	return all, nil
}

// agree is a collective vote: every rank says whether its part of a
// collective step worked, and every rank gets the same answer, nil or an
// error naming the ranks that failed (with this rank's own error). So a
// step that fails on one rank is undone on all, and none waits for a rank
// that gave up.
func agree(ctx context.Context, gc *gin.Comm, mine error) error {
	why := ""
	if mine != nil {
		why = mine.Error()
	}
	votes, err := allGatherJSON(ctx, gc, why)
	if err != nil {
		if mine != nil {
			return fmt.Errorf("%w (and the vote failed: %w)", mine, err)
		}
		return err
	}
	var failed []string
	for r, v := range votes {
		var s string
		if err := unmarshal(v, &s); err != nil {
			s = "unreadable vote: " + err.Error()
		}
		if s != "" && r != gc.Rank() {
			failed = append(failed, fmt.Sprintf("rank %d: %s", r, s))
		}
	}
	switch {
	case mine != nil:
		return mine
	case len(failed) > 0:
		return fmt.Errorf("%v: %w", failed, ErrPeerFailed)
	}
	return nil
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func leU64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }
