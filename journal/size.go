package journal

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a byte count such as Options.MaxSize (wrap's
// --audit-max-size, and its --max-frame): a positive number with an
// optional KiB/MiB/GiB (or K/M/G) suffix, at most 1 TiB.
func ParseSize(s string) (int, error) {
	mult := 1
	num := strings.TrimSpace(s)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a positive size such as 65536 or 64MiB", s)
	}
	return n * mult, nil
}
