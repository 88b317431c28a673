package collective

import "context"

// The Hierarchical algorithm (algorithm.go): groups of c.group consecutive
// ranks (one per host by default, Config.HostRanks), each with one rank
// that talks to the other groups.

// groupPeers calls fn with every rank of the group that starts at first
// but this one, in rank order, and stops at its first error.
func (c *Comm) groupPeers(first int, fn func(r int) error) error {
	for r := first; r < first+c.group; r++ {
		if r != c.me {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// otherGroups calls fn with the first rank of every group but the one that
// starts at first, in group order, and stops at its first error.
func (c *Comm) otherGroups(first int, fn func(g int) error) error {
	for g := 0; g < c.n; g += c.group {
		if g != first {
			if err := fn(g); err != nil {
				return err
			}
		}
	}
	return nil
}

// allReduceHierarchical: each rank puts its data into its own slot of the
// epoch's scratch half at its group's leader (the group's first rank). A
// leader copies its own data into its slot, reduces its group's slots in
// rank order into it, puts that into the same slot at every
// other leader, reduces the leaders' slots in group order into dst and
// puts dst into each member's dst. Every rank thus gets the leaders'
// result, bit-identical. A leader writes a member's dst only after the
// member's data came (in place, the member read it before); a member's
// end waits for its leader's result, which holds every rank's start, as
// the scratch halves need (Comm.begin).
func (c *Comm) allReduceHierarchical(ctx context.Context, dst, src Buffer, count int, dt DataType, op Op) error {
	b := count * dt.Size()
	h := c.begin()
	at := func(r int) int { return h + r*b }
	k := c.messages(b)
	lead := c.me - c.me%c.group
	if c.me != lead {
		if err := c.put(lead, c.scratch, at(c.me), src.Window, src.Offset, b); err != nil {
			return err
		}
		return c.await(ctx, lead, k)
	}
	mine := c.scratchBytes(at(c.me), b)
	copy(mine, src.bytes(b))
	err := c.groupPeers(lead, func(r int) error {
		if err := c.await(ctx, r, k); err != nil {
			return err
		}
		reduce(dt, op, mine, mine, c.scratchBytes(at(r), b))
		return nil
	})
	if err == nil {
		err = c.otherGroups(lead, func(l int) error { return c.put(l, c.scratch, at(c.me), c.scratch, at(c.me), b) })
	}
	if err != nil {
		return err
	}
	out := dst.bytes(b)
	for l := 0; l < c.n; l += c.group { // every leader's, in group order
		if l != c.me {
			if err := c.await(ctx, l, k); err != nil {
				return err
			}
		}
		switch {
		case l == c.group:
			reduce(dt, op, out, c.scratchBytes(at(0), b), c.scratchBytes(at(l), b))
		case l > c.group:
			reduce(dt, op, out, out, c.scratchBytes(at(l), b))
		}
	}
	return c.groupPeers(lead, func(r int) error { return c.put(r, dst.Window, dst.Offset, dst.Window, dst.Offset, b) })
}

// allGatherHierarchical: each rank puts its block into its own slot of
// the epoch's scratch half at its group's leader (the group's first
// rank). A leader, once its group's blocks are there, puts them (its
// group's slots, one run) into the same slots at every other leader, then,
// once every other leader's came, copies all the slots into its dst and
// puts its dst into each member's dst, one message each. A leader writes a
// member's dst only after the member's block came (in place, the member
// read it before); a member's end waits for its leader's, which holds
// every rank's start, as the scratch halves need (Comm.begin).
func (c *Comm) allGatherHierarchical(ctx context.Context, dst, src Buffer, b int) error {
	h := c.begin()
	at := func(r int) int { return h + r*b }
	lead := c.me - c.me%c.group
	all, run := c.n*b, c.group*b
	if c.me != lead {
		if err := c.put(lead, c.scratch, at(c.me), src.Window, src.Offset, b); err != nil {
			return err
		}
		return c.await(ctx, lead, c.messages(all))
	}
	copy(c.scratchBytes(at(c.me), b), src.bytes(b))
	err := c.groupPeers(lead, func(r int) error { return c.await(ctx, r, c.messages(b)) })
	if err == nil {
		err = c.otherGroups(lead, func(l int) error { return c.put(l, c.scratch, at(c.me), c.scratch, at(c.me), run) })
	}
	if err == nil {
		err = c.otherGroups(lead, func(l int) error { return c.await(ctx, l, c.messages(run)) })
	}
	if err != nil {
		return err
	}
	copy(dst.bytes(all), c.scratchBytes(at(0), all))
	return c.groupPeers(lead, func(r int) error { return c.put(r, dst.Window, dst.Offset, dst.Window, dst.Offset, all) })
}

// broadcastHierarchical is Direct in two levels: each group's forwarder
// (the root in the root's group, the group's first rank in the others)
// waits until its members entered; a forwarder other than the root then
// tells the root and waits for its data; the root, told by every other
// forwarder, puts its dst into theirs; each forwarder puts its dst into
// its members'. Across hosts one message goes each way per other group,
// not per rank. A forwarder writes a member's dst only after the member
// entered, the root a forwarder's only after it did.
func (c *Comm) broadcastHierarchical(ctx context.Context, dst Buffer, b, root int) error {
	c.begin()
	first := c.me - c.me%c.group
	mine, k := first, c.messages(b)
	if root-first >= 0 && root-first < c.group {
		mine = root
	}
	if c.me != mine {
		if err := c.notify(mine); err != nil {
			return err
		}
		return c.await(ctx, mine, k)
	}
	send := func(r int) error { return c.put(r, dst.Window, dst.Offset, dst.Window, dst.Offset, b) }
	err := c.groupPeers(first, func(r int) error { return c.await(ctx, r, 1) })
	switch {
	case err != nil:
	case c.me != root:
		if err = c.notify(root); err == nil {
			err = c.await(ctx, root, k)
		}
	default: // the other groups' forwarders are their first ranks
		if err = c.otherGroups(first, func(g int) error { return c.await(ctx, g, 1) }); err == nil {
			err = c.otherGroups(first, send)
		}
	}
	if err != nil {
		return err
	}
	return c.groupPeers(first, send)
}

// reduceScatterHierarchical: each rank puts its whole source (size
// blocks) into its own slot of the epoch's scratch half at its group's
// leader (the group's first rank). A leader copies its source into its
// slot and reduces its group's slots in rank order into it; it puts each
// other group's blocks (one run) into that group's leader's scratch, in
// the runs after the members' slots, at this group's place; then it
// reduces the runs of every group in group order over its own group's
// blocks (into its own run's place) and puts each member's block at the
// start of the member's scratch half, which the member copies into its dst
// (in place, dst is at another offset on every rank). A member's end waits
// for its leader's, which holds every rank's start, as the scratch halves
// need (Comm.begin).
func (c *Comm) reduceScatterHierarchical(ctx context.Context, dst, src Buffer, count int, dt DataType, op Op) error {
	b := count * dt.Size()
	h := c.begin()
	all, run := c.n*b, c.group*b
	slot := func(r int) int { return h + r%c.group*all }               // rank r's source, at its leader
	from := func(l int) int { return h + c.group*all + l/c.group*run } // leader l's run, at another leader
	lead := c.me - c.me%c.group
	if c.me != lead {
		if err := c.put(lead, c.scratch, slot(c.me), src.Window, src.Offset, all); err != nil {
			return err
		}
		if err := c.await(ctx, lead, c.messages(b)); err != nil {
			return err
		}
		copy(dst.bytes(b), c.scratchBytes(h, b))
		return nil
	}
	mine := c.scratchBytes(slot(c.me), all)
	copy(mine, src.bytes(all))
	err := c.groupPeers(lead, func(r int) error {
		if err := c.await(ctx, r, c.messages(all)); err != nil {
			return err
		}
		reduce(dt, op, mine, mine, c.scratchBytes(slot(r), all))
		return nil
	})
	if err == nil {
		err = c.otherGroups(lead, func(l int) error { return c.put(l, c.scratch, from(c.me), c.scratch, slot(c.me)+l*b, run) })
	}
	if err != nil {
		return err
	}
	out := c.scratchBytes(from(c.me), run)
	for l := 0; l < c.n; l += c.group { // every group's run, in group order
		part := c.scratchBytes(slot(c.me)+lead*b, run)
		if l != c.me {
			if err := c.await(ctx, l, c.messages(run)); err != nil {
				return err
			}
			part = c.scratchBytes(from(l), run)
		}
		if l == 0 {
			copy(out, part)
		} else {
			reduce(dt, op, out, out, part)
		}
	}
	copy(dst.bytes(b), out[:b])
	return c.groupPeers(lead, func(r int) error { return c.put(r, c.scratch, h, c.scratch, from(c.me)+(r-lead)*b, b) })
}
