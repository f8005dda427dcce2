// Package alloc measures what a piece of code allocates, for the tests
// that bound the memory hostile input may cost. It imports only the
// standard library, so any package's own tests may use it.
package alloc

import "runtime"

// Bytes is the bytes f allocates, after a collection.
func Bytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
