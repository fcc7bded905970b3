package file

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/edge-agent/edge-agent/connector/file/internal/fingerprint"
	"github.com/edge-agent/edge-agent/connector/internal/multiline"
)

// maxPollBytes bounds the bytes one Poll reads, so a poll stays short
// even when no line ends for a long time (a huge partial or truncated
// line, multiline groups still open): Poll must never stall the loop.
const maxPollBytes = 16 << 20

// readAll gives every file with something to read a turn, round-robin,
// each turn limited to a fair share of the remaining budget, until the
// budget is used or every file is at its end. The next poll starts after
// the last file served, so a hot file cannot starve the others.
func (in *Input) readAll(now time.Time) error {
	in.rd.tick++
	poll := in.rd.tick
	defer func() { in.ring, in.cursor = compactRing(in.ring, in.cursor) }()
	in.rd.byteBudget = maxPollBytes
	for in.em.budget > 0 && in.rd.byteBudget > 0 {
		active := 0
		for _, t := range in.ring {
			if t.wantsTurn(poll) {
				active++
			}
		}
		if active == 0 {
			return nil
		}
		quota := in.em.budget / active
		if quota < 1 {
			quota = 1
		}
		n := len(in.ring)
		start := in.cursor % n
		for k := 0; k < n && in.em.budget > 0 && in.rd.byteBudget > 0; k++ {
			i := (start + k) % n
			t := in.ring[i]
			if !t.wantsTurn(poll) {
				continue
			}
			if err := in.readTurn(t, quota, poll, now); err != nil {
				return err
			}
			in.cursor = (i + 1) % n
		}
	}
	return nil
}

// wantsTurn reports whether t has something to do in poll: lines to
// read or groups to emit.
func (t *tracked) wantsTurn(poll uint64) bool {
	if t.life.dead() || t.eofPoll == poll || t.copyOf != nil || t.resume != nil || t.hold == holding {
		return false
	}
	if t.asm != nil && t.asm.Ready() != nil {
		return true
	}
	return t.f != nil || t.life.needsRead()
}

// readTurn reads t until quota events were produced, the budget is used,
// or the end of the file.
func (in *Input) readTurn(t *tracked, quota int, poll uint64, now time.Time) error {
	defer in.em.settle() // the turn's last line carries t's position
	in.rd.tick++
	t.served = in.rd.tick
	emitted := 0
	if t.asm != nil {
		emitted = in.em.emitReady(t, false)
		if in.em.budget == 0 {
			return nil
		}
	}
	if ok, err := in.ensureOpen(t, poll, now); !ok {
		return err
	}
	verified := false
	for emitted < quota && in.em.budget > 0 && in.rd.byteBudget > 0 {
		n, rerr := t.f.ReadAt(in.rd.readBuf[:in.rd.readSize(min(quota-emitted, in.em.budget))], t.readPos)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return in.set.readFailed(t, rerr)
		}
		if n == 0 {
			in.reachedEOF(t, poll)
			return nil
		}
		if !verified {
			verified = true
			switch v, err := in.verifyHead(t, now); {
			case err != nil:
				return err
			case v == headGone:
				return nil
			case v == headMoved:
				continue
			}
		}
		full, done, fed := in.consumeChunk(t, n, quota-emitted, now)
		emitted += full
		if done {
			return nil
		}
		if !fed || errors.Is(rerr, io.EOF) {
			in.reachedEOF(t, poll)
			return nil
		}
	}
	return nil
}

// ensureOpen reopens t for its turn if it is closed and has something to
// read; false when the turn ends here.
func (in *Input) ensureOpen(t *tracked, poll uint64, now time.Time) (bool, error) {
	if t.f != nil {
		return true, nil
	}
	if !t.life.needsRead() {
		t.eofPoll = poll
		return false, nil
	}
	ok, err := in.set.reopen(t, now)
	if err != nil || !ok {
		t.eofPoll = poll
		return false, err
	}
	return true, nil
}

// headCheck is what verifyHead found.
type headCheck uint8

const (
	headSame  headCheck = iota // read on from readPos
	headMoved                  // read on, from where readPos is now
	headGone                   // t is not read on in this turn (closed, or a waiting copy)
)

// verifyHead makes sure, before new bytes are used, that t still starts
// the way it did (a copytruncate followed by fast writes can make a shrunk
// file look like it grew), and that a file not read from yet is no copy.
func (in *Input) verifyHead(t *tracked, now time.Time) (headCheck, error) {
	cur, err := fingerprint.Read(t.f, in.cfg.FingerprintBytes, in.rd.fpBuf)
	if err != nil {
		return headGone, in.set.readFailed(t, err)
	}
	if !t.headMatches(cur) {
		in.set.truncate(t, cur)
		if t.f == nil || t.copyOf != nil {
			return headGone, nil // its new content is a copy's (rotation_copies.go)
		}
		return headMoved, nil
	}
	if t.readPos == 0 && t.offset == 0 {
		if len(cur) > t.headChecked && in.set.copyAtFirstRead(t, cur) {
			if t.f == nil || t.copyOf != nil {
				return headGone, nil
			}
			return headMoved, nil // reading on from where its original was delivered
		}
		if in.set.holdCopy(t, cur, now) {
			return headGone, nil
		}
	}
	if len(cur) > t.fp.Len() {
		setFP(in.files, t, cur)
		t.refreshState()
		t.keepHead(cur[:t.fp.Len()])
	}
	return headSame, nil
}

// headMatches is t.fp.Matches(cur) without hashing cur when it starts
// with the bytes that last matched the same fingerprint: a file read
// turn after turn is checked against its head on every turn.
func (t *tracked) headMatches(cur []byte) bool {
	s := t.fp.Sum()
	if t.headSum == s && len(t.head) == s.Len && len(cur) >= s.Len && bytes.Equal(cur[:s.Len], t.head) {
		return true
	}
	if !t.fp.Matches(cur) {
		return false
	}
	t.keepHead(cur[:s.Len])
	return true
}

// keptHeadMax bounds the head bytes an open file keeps for headMatches,
// so that a large fingerprint-bytes times max-open-files does not pin
// memory: a longer fingerprint is matched by its hash on every turn.
const keptHeadMax = 1 << 10

// keepHead records b, the first bytes of t, as matching t's fingerprint.
func (t *tracked) keepHead(b []byte) {
	if len(b) > keptHeadMax {
		t.dropHead()
		return
	}
	t.head = append(t.head[:0], b...)
	t.headSum = t.fp.Sum()
}

// consumeChunk turns the n bytes just read into lines and events, up to
// want events. It returns how many it emitted, whether the turn is over
// (the budget or want used) and whether the splitter took any byte.
func (in *Input) consumeChunk(t *tracked, n, want int, now time.Time) (emitted int, done, fed bool) {
	t.life.grew()
	t.behind = false
	t.lastData = now
	in.em.local.bytes += int64(n)
	in.rd.byteBudget -= n
	chunk := in.rd.readBuf[:n]
	ts := now.UnixMilli()
	if ts != in.em.tsCached {
		in.em.tsCached = ts
		in.em.tsTail = append(append(append(in.em.tsTail[:0], `,"_ts":`...), strconv.AppendInt(nil, ts, 10)...), `,"payload":`...)
	}
	if t.readPos == 0 {
		// The byte-order mark is only known once the file has bytes.
		t.setBOM(in.fmt.codec, chunk, in.cfg.MaxLineBytes)
	}
	from := t.readPos
	acc := t.split.Feed(chunk, t.readPos)
	t.readPos += int64(acc)
	lines, last := 0, from
	for {
		line, end, truncated, ok := t.split.Next()
		if !ok {
			break
		}
		lines++
		last = end
		emitted += in.em.handleLine(t, line, end, truncated, ts)
		if emitted >= want || in.em.budget == 0 {
			in.rd.learnLineBytes(last-from, lines)
			if r := t.split.Stop(); r >= 0 {
				t.readPos = r
			}
			return emitted, true, true
		}
	}
	in.rd.learnLineBytes(last-from, lines)
	return emitted, false, acc > 0
}

// minReadBytes is the smallest read: below it the syscall costs more
// than the bytes read again after a poll that stops early.
const minReadBytes = 4 << 10

// readSize is how many bytes to read for about the lines still wanted.
// A poll that stops at its event budget gives back what it read past its
// last line, and the next poll reads it again: with the scheduler's 128
// events per poll and a full readChunk per read, a file was read about
// 2.5 times over. So reads are sized to the lines wanted (and an eighth more)
// at the mean line length seen, between minReadBytes and readChunk.
func (rd *readers) readSize(wantLines int) int {
	if rd.lineBytes == 0 {
		return len(rd.readBuf)
	}
	return min(max((wantLines+wantLines/8+1)*rd.lineBytes, minReadBytes), len(rd.readBuf))
}

// learnLineBytes updates the mean line length from a chunk that yielded
// lines over n bytes (a moving average, so a file's long lines or a
// second file's short ones are followed within a few reads).
func (rd *readers) learnLineBytes(n int64, lines int) {
	if lines == 0 || n <= 0 {
		return
	}
	l := int(min(n/int64(lines), int64(len(rd.readBuf))))
	if rd.lineBytes == 0 {
		rd.lineBytes = l
		return
	}
	rd.lineBytes += (l - rd.lineBytes) / 4
}

// reachedEOF records that t has no more data now; a file that is gone
// (deleted, renamed out of the globs) is finished and forgotten.
func (in *Input) reachedEOF(t *tracked, poll uint64) {
	t.life.reachedEOF()
	t.eofPoll = poll
	if !t.life.gone() {
		return
	}
	// Last chance to notice a truncation before forgetting the file.
	if fi, err := t.f.Stat(); err == nil && fi.Size() < t.readPos && !t.behind {
		in.set.checkShrunk(t, fi.Size())
		t.eofPoll = 0 // read it again in this poll
		return
	}
	in.set.retire(t, "deleted and read to its end")
}

// handleLine turns one complete raw line into an event (or feeds it to
// the multiline assembler) and returns how many events it emitted.
func (em *emitter) handleLine(t *tracked, raw []byte, end int64, truncated bool, ts int64) int {
	em.local.lines++
	if truncated {
		em.local.truncated++
		if em.rules.fmt.codec.kind == encUTF8 {
			raw = trimPartialRune(raw)
		}
	}
	if t.consumed == 0 && t.bomLen > 0 && len(raw) >= t.bomLen {
		raw = raw[t.bomLen:]
	}
	t.consumed = end
	t.consumedLine++
	if t.asm == nil {
		t.offset, t.line = end, t.consumedLine
		if em.rules.filter != nil {
			if txt, _ := em.rules.fmt.text(raw, t.bigEndian); !em.rules.filter.Keep(txt) {
				em.dropFiltered(t)
				return 1
			}
		}
		buf := em.arena.begin(len(t.fileJSON) + len(raw) + len(em.tsTail) + len(em.rules.extra) + 80)
		start := len(buf)
		buf = t.appendSingleHead(buf, t.line, end, em.tsTail)
		buf = em.rules.fmt.appendPayload(buf, raw, nil, t.bigEndian)
		buf = append(buf, em.rules.extra...)
		em.emitLine(t, em.arena.end(append(buf, '}'), start))
		return 1
	}
	txt, _ := em.rules.fmt.text(raw, t.bigEndian)
	t.asm.Add(multiline.Line{Text: txt, Num: t.consumedLine, End: end, TS: ts})
	return em.emitReady(t, false)
}

// trimPartialRune drops an incomplete UTF-8 sequence that a truncation
// cut in half, so the payload does not end in a replacement character.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < utf8.RuneSelf {
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// compactRing drops retired files from the read order ring, keeping the
// round-robin cursor on the same live file.
func compactRing(ring []*tracked, cursor int) ([]*tracked, int) {
	n := 0
	cur := cursor
	for i, t := range ring {
		if t.life.dead() {
			if i < cursor {
				cur--
			}
			continue
		}
		ring[n] = t
		n++
	}
	clear(ring[n:])
	ring = ring[:n]
	if cur < 0 || cur >= n {
		cur = 0
	}
	return ring, cur
}
