package confine

// supported reports why confinement cannot run on this system; on Linux
// it always can be tried, and the helper decides what the kernel enforces.
func supported() error { return nil }
