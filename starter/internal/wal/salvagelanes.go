package wal

import (
	"slices"
	"strings"
)

// Lanes, through salvage (lanes.go). The copy keeps each row's lane, so a
// backlog salvaged during an outage still drains its high lanes first:
// the first walk reads lane_blocks (the first row id of a block of a
// named lane -> its name) and the names of the lanes' pending indexes;
// the copy is opened with those lanes, and a row copied under its own id
// goes into a block of its lane, recorded in the copy's lane_blocks, so
// that it is PENDING in its lane's index. A renumbered row, or a row of a
// block whose lane_blocks entry was on an unreadable page, goes to the
// default lane: a lane is a row's priority, never whether it is sent.
// The agent's next open folds every lane its config no longer names
// into the default one, as at any start.
type laneCopy struct {
	byFirst map[uint64]string // lane_blocks read: block's first row id -> lane
	names   map[string]bool   // lanes named by lane_blocks or a pending index
	src     map[uint64]string // source row id -> lane, for rows of named lanes read
	dest    map[uint64]string // copy's row id -> lane, for rows copied under their own id
}

// noteBlock records a lane_blocks entry of the source.
func (c *laneCopy) noteBlock(first uint64, name string) {
	if checkLaneName(name) != nil {
		return // damaged: the block's rows go to the default lane
	}
	if c.byFirst == nil {
		c.byFirst = map[uint64]string{}
	}
	c.byFirst[first] = name
	c.noteName(name)
}

// noteName records a lane the source holds.
func (c *laneCopy) noteName(name string) {
	if checkLaneName(name) != nil {
		return
	}
	if c.names == nil {
		c.names = map[string]bool{}
	}
	c.names[name] = true
}

// read records the lane of the rows of b salvage read, if b is of a named lane.
func (c *laneCopy) read(b *block, rows []Row) {
	name, ok := c.byFirst[b.first]
	if !ok || len(rows) == 0 {
		return
	}
	if c.src == nil {
		c.src = map[uint64]string{}
	}
	for i := range rows {
		c.src[rows[i].ID] = name
	}
}

// copied records the lane of source row srcID, copied as the copy's row
// id; renumbered rows keep none.
func (c *laneCopy) copied(srcID, id uint64, renumbered bool) {
	name, ok := c.src[srcID]
	if !ok || renumbered {
		return
	}
	if c.dest == nil {
		c.dest = map[uint64]string{}
	}
	c.dest[id] = name
}

// laneOf is the lane of the copy's row id ("" the default lane); c may be nil.
func (c *laneCopy) laneOf(id uint64) string {
	if c == nil {
		return ""
	}
	return c.dest[id]
}

// list is the lanes the copy is opened with, by name: the order of the
// agent's config is not in the file, and the next open gives it.
func (c *laneCopy) list() []string {
	out := make([]string, 0, len(c.names))
	for n := range c.names {
		out = append(out, n)
	}
	slices.SortFunc(out, strings.Compare)
	return out
}
