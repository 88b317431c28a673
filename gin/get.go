package gin

import (
	"fmt"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Get reads bytes bytes of the peer's part of src at srcOff into this
// rank's part of dst at dstOff: a one-sided read, the peer takes no part
// (ncclGin::get, NCCL 2.30 device API; fi_read(3)). peer is a rank of team;
// it may be this rank. local runs here once the bytes have landed in dst:
// CounterInc(c) ticks counter c then, and Flush returns only once every
// earlier Get of this context has landed. The argument order is Put's:
// destination first.
//
// A Get is not ordered after this context's earlier puts (RDMA reads may
// pass writes, fi_msg(3) FI_ORDER_RAW): read bytes that a put wrote once
// that put's signal was seen.
//
// Errors: ErrNotSupported where the provider cannot read
// (Capabilities().Get); otherwise those of Put (ErrNotPeer included).
func (x *Context) Get(team Team, peer int, dst *Window, dstOff int, src *Window, srcOff int, bytes int,
	local LocalAction, opts ...Option) error {
	c := x.c
	if !c.caps.Get {
		return fmt.Errorf("get on provider %s: %w", c.prov.Name(), ErrNotSupported)
	}
	p, ctr, err := x.dataCheck(team, peer, dst, dstOff, src, srcOff, bytes, local, "get destination", "get source")
	if err != nil {
		return err
	}
	w := rdma.WQE{Op: rdma.OpRead, Local: dst.mr, LocalOff: dstOff, Remote: src.remotes[p.slot], RemoteOff: srcOff, Len: bytes}
	return x.send(p, &w, None, ctr, 0, 0, opts)
}
