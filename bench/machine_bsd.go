//go:build darwin || freebsd

package bench

import "golang.org/x/sys/unix"

// fsType names the filesystem holding dir as statfs reports it (apfs,
// ufs, zfs, …); these systems have no /proc/self/mountinfo.
func fsType(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return ""
	}
	return unix.ByteSliceToString(st.Fstypename[:])
}
