package processing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// tsField is where timestamp writes: the event time in Unix milliseconds,
// as the inputs write it.
const tsField = "_ts"

// commonLayouts are tried by layout auto after RFC 3339, in order.
var commonLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05,999",
	time.RFC1123Z,
	time.RFC1123,
	"02/Jan/2006:15:04:05 -0700", // common log format
	time.RFC822Z,
	time.ANSIC,
	time.UnixDate,
}

type timestamper struct {
	n        *counts
	field    path
	parse    func(v any) (time.Time, error)
	fallback string
}

func newTimestamper(i int, c *TimestampConfig, n *counts) (processor, error) {
	t := &timestamper{n: n, fallback: strings.ToLower(c.Fallback)}
	var errs []error
	if err := validPath(c.Field); err != nil {
		errs = append(errs, stepError(i, "timestamp.field", err))
	}
	t.field = parsePath(c.Field)
	switch t.fallback {
	case "":
		t.fallback = "keep"
	case "keep", "now", "drop":
	default:
		errs = append(errs, stepError(i, "timestamp.fallback", fmt.Errorf("%q: use keep, now or drop", c.Fallback)))
	}
	switch l := c.Layout; strings.ToLower(l) {
	case "", "auto":
		t.parse = parseAutoTime
	case "rfc3339":
		t.parse = layoutParser(time.RFC3339Nano)
	case "unix-s":
		t.parse = unixParser(time.Second)
	case "unix-ms":
		t.parse = unixParser(time.Millisecond)
	case "unix-ns":
		t.parse = unixParser(time.Nanosecond)
	default:
		if !strings.Contains(l, "2006") && !strings.Contains(l, "15") && !strings.Contains(l, "Jan") {
			errs = append(errs, stepError(i, "timestamp.layout", fmt.Errorf("%q: use auto, rfc3339, unix-s, unix-ms, unix-ns or a Go layout written for 2006-01-02 15:04:05", l)))
		}
		t.parse = layoutParser(l)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *timestamper) counts() *counts { return t.n }

func (t *timestamper) apply(it *item, now time.Time) verdict {
	fields := it.ev.mapFields()
	v, ok := t.field.get(fields)
	var ts time.Time
	var err error
	if !ok {
		err = errors.New("missing")
	} else {
		ts, err = t.parse(v)
	}
	if err != nil {
		t.n.errs.Add(1)
		switch t.fallback {
		case "drop":
			return dropped
		case "now":
			ts = now
		default:
			return pass
		}
	}
	fields[tsField] = ts.UnixMilli()
	it.ev.dirty = true
	return pass
}

func layoutParser(layout string) func(any) (time.Time, error) {
	return func(v any) (time.Time, error) {
		s, ok := v.(string)
		if !ok {
			return time.Time{}, errors.New("not text")
		}
		return time.Parse(layout, strings.TrimSpace(s))
	}
}

func unixParser(unit time.Duration) func(any) (time.Time, error) {
	return func(v any) (time.Time, error) {
		f, err := number(v)
		if err != nil {
			return time.Time{}, err
		}
		return fromUnix(f, unit)
	}
}

// fromUnix converts f units since the epoch, refusing what time.Time
// cannot hold.
func fromUnix(f float64, unit time.Duration) (time.Time, error) {
	ns := f * float64(unit)
	if math.IsNaN(ns) || math.Abs(ns) > math.MaxInt64/2 {
		return time.Time{}, errors.New("out of range")
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

func number(v any) (float64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = string(x)
	case string:
		s = strings.TrimSpace(x)
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	default:
		return 0, errors.New("not a number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.New("not a number")
	}
	return f, nil
}

// parseAutoTime takes a number as Unix seconds, milliseconds or
// nanoseconds by its magnitude, and text in the common layouts.
func parseAutoTime(v any) (time.Time, error) {
	if f, err := number(v); err == nil {
		switch a := math.Abs(f); {
		case a < 1e11:
			return fromUnix(f, time.Second)
		case a < 1e14:
			return fromUnix(f, time.Millisecond)
		case a < 1e17:
			return fromUnix(f, time.Microsecond)
		default:
			return fromUnix(f, time.Nanosecond)
		}
	}
	s, ok := v.(string)
	if !ok {
		return time.Time{}, errors.New("neither text nor a number")
	}
	s = strings.TrimSpace(s)
	for _, l := range commonLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("no known layout matches")
}
