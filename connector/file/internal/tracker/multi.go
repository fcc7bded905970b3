package tracker

// multi maps a key to the values added under it, most of them alone: the
// latest is kept in a plain map, the rare older ones aside, so that a key
// with one value costs one map entry and no slice.
type multi[K, V comparable] struct {
	latest map[K]V
	older  map[K][]V // oldest first
}

func newMulti[K, V comparable]() multi[K, V] {
	return multi[K, V]{latest: make(map[K]V), older: make(map[K][]V)}
}

// add puts v under k as its latest value.
func (m *multi[K, V]) add(k K, v V) {
	if x, ok := m.latest[k]; ok {
		m.older[k] = append(m.older[k], x)
	}
	m.latest[k] = v
}

// remove takes v from under k; the one added before it becomes the latest.
func (m *multi[K, V]) remove(k K, v V) {
	x, ok := m.latest[k]
	if !ok {
		return
	}
	if x != v {
		deleteFrom(m.older, k, v)
		return
	}
	list := m.older[k]
	if len(list) == 0 {
		delete(m.latest, k)
		return
	}
	m.latest[k] = list[len(list)-1]
	if len(list) == 1 {
		delete(m.older, k)
	} else {
		var zero V
		list[len(list)-1] = zero
		m.older[k] = list[:len(list)-1]
	}
}

// get returns the latest value under k.
func (m *multi[K, V]) get(k K) (V, bool) {
	v, ok := m.latest[k]
	return v, ok
}

// all returns the values under k, the latest first, in a new slice.
func (m *multi[K, V]) all(k K) []V {
	v, ok := m.latest[k]
	if !ok {
		return nil
	}
	list := m.older[k]
	out := make([]V, 0, 1+len(list))
	out = append(out, v)
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, list[i])
	}
	return out
}
