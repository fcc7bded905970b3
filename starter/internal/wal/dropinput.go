package wal

import (
	"maps"
	"slices"
)

// DropPolicy is how the size and age drops of DropUnsent treat the rows
// of one input (agent.yaml's inputs[].queue-drop).
type DropPolicy uint8

const (
	// DropNormal rows go in the order of DropUnsent without policies.
	DropNormal DropPolicy = iota
	// DropFirst rows go, oldest first whatever their lane, before any
	// DropNormal row is dropped for size.
	DropFirst
	// DropNever rows are never dropped for size or age.
	DropNever
)

// dropByInput is DropUnsent with lim.Inputs. Age first: every row of the
// groups created before lim.OlderThanMS but DropNever ones. Then for size,
// while the payload exceeds lim.MaxBytes: the DropFirst rows, oldest
// group first whatever its lane; then the DropNormal rows, in the lane
// order of lim.LaneOrder (dropByLane) or oldest group first. A group
// whose block cannot be read has unknown inputs: its rows go as
// DropNormal ones (they would go DEAD at their claim anyway).
func (tx *Tx) dropByInput(lim DropLimits) (full, age Dropped, more bool, err error) {
	d := inputDropper{tx: tx, lim: lim, max: lim.MaxBlocks}
	if d.max <= 0 {
		d.max = 64
	}
	defer func() {
		if ferr := d.f.free(tx); err == nil {
			err = ferr
		}
	}()
	if lim.OlderThanMS > 0 {
		old := func(h blockHeader) bool { return h.created < lim.OlderThanMS }
		if more, err = d.pass(&age, GapDroppedAge, nil, notNever, old); err != nil || more {
			return full, age, more, err
		}
	}
	if lim.MaxBytes <= 0 {
		return full, age, false, nil
	}
	over := func(blockHeader) bool { return tx.ctr.payloadBytes > lim.MaxBytes }
	if slices.Contains(slices.Collect(maps.Values(lim.Inputs)), DropFirst) {
		if more, err = d.pass(&full, GapDroppedFull, nil, onlyFirst, over); err != nil || more {
			return full, age, more, err
		}
	}
	for _, lane := range lim.LaneOrder {
		if more, err = d.pass(&full, GapDroppedFull, &lane, onlyNormal, over); err != nil || more {
			return full, age, more, err
		}
	}
	more, err = d.pass(&full, GapDroppedFull, nil, onlyNormal, over)
	return full, age, more, err
}

func notNever(p DropPolicy) bool   { return p != DropNever }
func onlyFirst(p DropPolicy) bool  { return p == DropFirst }
func onlyNormal(p DropPolicy) bool { return p == DropNormal }

// inputDropper walks the commit groups for dropByInput; its freer frees
// the emptied blocks once the walks are done.
type inputDropper struct {
	tx      *Tx
	lim     DropLimits
	f       blockFreer
	dropped int // blocks that lost rows, bounded by max
	max     int
}

// pass drops, from the groups oldest first (of lane only, when lane is
// set), the rows whose input's policy take accepts, until cont refuses
// a group. more reports that it stopped at the bound of groups.
func (d *inputDropper) pass(into *Dropped, gap string, lane *string, take func(DropPolicy) bool, cont func(blockHeader) bool) (more bool, err error) {
	tx := d.tx
	c := tx.blocks.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if lane != nil && tx.pend.laneOfBlock(k) != *lane {
			continue
		}
		h, err := parseBlockHeader(getBlock(tx.blocks, k))
		if err != nil || h.standIn {
			continue // its rows go DEAD at their claim; stand-ins are never dropped
		}
		if !cont(h) {
			return false, nil
		}
		if d.dropped == d.max {
			return true, nil
		}
		rows, bytes, sources, err := d.dropIn(h, gap, take)
		if err != nil {
			return false, err
		}
		if rows > 0 {
			d.dropped++
		}
		into.add(rows, bytes, h.created, sources)
	}
	return false, nil
}

// dropIn drops the rows of group h whose input's policy take accepts, one
// run of consecutive such rows at a time, and returns the inputs of the
// runs that lost rows.
func (d *inputDropper) dropIn(h blockHeader, gap string, take func(DropPolicy) bool) (rows int, bytes int64, sources []string, err error) {
	tx := d.tx
	b := tx.blockOf(h.first)
	if b == nil || b.err != nil {
		if !take(DropNormal) {
			return 0, 0, nil, nil
		}
		rows, bytes, err = tx.dropPendingIn(&d.f, h.first, h.last(), gap)
		return rows, bytes, nil, err
	}
	src := make([]bool, len(b.sources)) // by index into b.sources: taken
	for i, s := range b.sources {
		src[i] = take(d.lim.Inputs[s])
	}
	last := h.last()
	for id := h.first; id <= last; id++ {
		si := b.src[id-b.first]
		if !src[si] {
			continue
		}
		hi := id
		for hi < last && b.src[hi+1-b.first] == si {
			hi++
		}
		n, nb, err := tx.dropPendingIn(&d.f, id, hi, gap)
		if err != nil {
			return rows, bytes, sources, err
		}
		if n > 0 {
			rows, bytes = rows+n, bytes+nb
			sources = append(sources, b.sources[si])
		}
		id = hi
	}
	return rows, bytes, sources, nil
}
