package bench

import "golang.org/x/sys/unix"

// fsType names the filesystem holding dir by its statfs magic number,
// for when /proc/self/mountinfo does not name it.
func fsType(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return ""
	}
	return fsMagic(st.Type)
}

func fsMagic(t int64) string {
	switch t {
	case unix.EXT4_SUPER_MAGIC:
		return "ext2/3/4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlay"
	case unix.F2FS_SUPER_MAGIC:
		return "f2fs"
	case 0x2fc12fc1:
		return "zfs"
	}
	return "unknown"
}
