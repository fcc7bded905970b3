package file

// fdReserve is how many descriptors below the process's open-files limit
// max-open-files leaves free for what is not a watched file: the WAL, the
// log file, connections to the engine, the change watcher, stdio and the
// runtime's own. Files opened beyond the limit fail with EMFILE, and so
// would the WAL and the sockets.
const fdReserve = 64

// clampOpenFiles returns how many files may be open at once given the
// configured want and the soft open-files limit (0: unknown, or no limit),
// and whether it had to lower want.
func clampOpenFiles(want int, limit uint64) (int, bool) {
	if limit == 0 || limit >= uint64(want)+fdReserve {
		return want, false
	}
	if limit <= fdReserve+1 {
		return 1, true
	}
	return int(limit - fdReserve), true
}
