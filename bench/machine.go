package bench

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Machine is where the figures came from.
type Machine struct {
	CPU        string `json:"cpu"`
	Cores      int    `json:"cores"` // logical CPUs online
	GOMAXPROCS int    `json:"gomaxprocs"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`                 // the harness's runtime
	BuildGo    string `json:"build_go,omitempty"` // the toolchain that built aegis
	Aegis      string `json:"aegis"`              // aegis --version
	// The filesystem of the audit directory.
	AuditDir   string  `json:"audit_dir"`
	FS         string  `json:"fs"`             // type, from /proc/self/mountinfo (statfs magic if not found)
	Mount      string  `json:"mount"`          // its mount point
	Device     string  `json:"device"`         // its source
	MountOpts  string  `json:"mount_opts"`     // per-mount and superblock options
	FsyncFloor float64 `json:"fsync_floor_ns"` // median raw fdatasync of a small append there
}

// machine describes this machine and the filesystem holding dir.
func machine(dir string) Machine {
	m := Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Go:         runtime.Version(),
		AuditDir:   dir,
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	m.FS, m.Mount, m.Device, m.MountOpts = mountOf(dir)
	if m.FS == "" {
		m.FS = fsType(dir) // machine_linux.go, machine_other.go
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// mountOf finds the mount holding dir in /proc/self/mountinfo: the
// longest mount point that is a prefix of dir's real path.
func mountOf(dir string) (fstype, mountPoint, source, opts string) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	best := -1
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional…] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 6 || len(b) < 2 {
			continue
		}
		mp := unescapeMount(a[4])
		if !under(real, mp) || len(mp) <= best {
			continue
		}
		best = len(mp)
		fstype, mountPoint, source, opts = b[0], mp, b[1], a[5]
		if len(b) > 2 {
			opts += " " + b[2]
		}
	}
	return
}

func under(path, mp string) bool {
	return mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
