package frame

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapAnon maps n bytes (rounded up to a page) of private anonymous memory,
// without reserving swap for them (MAP_NORESERVE): a page costs only once
// it is written.
func mapAnon(n int) ([]byte, error) {
	page := os.Getpagesize()
	n = (n + page - 1) / page * page
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
}

// dropPages gives b's whole pages back to the system: they read as zeros
// again, and are resident again only once written.
func dropPages(b []byte) {
	page := os.Getpagesize()
	if len(b) < page {
		return
	}
	// b starts on a page boundary: mappings start on one, and mappedKeep
	// is a multiple of every page size.
	unix.Madvise(b[:len(b)/page*page], unix.MADV_DONTNEED)
}
