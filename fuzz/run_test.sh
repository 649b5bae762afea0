#!/usr/bin/env bash
# fuzz/run_test.sh — check fuzz/run.sh's verdicts on targets whose outcome
# is known, in a throwaway module beside a copy of the script:
#
#   - FuzzFine holds for every input: a pass, with executions;
#   - FuzzCrash fails on any input of two bytes or more: a failure that
#     names the failing input Go wrote;
#   - FuzzSlowSeeds takes longer over its seed corpus than the budget
#     allows, with no seed done to measure its pace by: it never fuzzes,
#     a failure;
#   - a baseline cut short with progress to measure, from a scripted go
#     command: run again for longer, a pass when that run fuzzes, a
#     failure ("never fuzzed") when it does not;
#   - -f: a target reads its seed corpus alone, not the inputs the fuzz
#     cache holds, and leaves the cache as it was;
#   - Go's deadline race (go.dev/issue/75804) from a scripted go command:
#     a pass with minimisation off and no input written, a failure when a
#     failing input appeared (a crasher being minimised as time ran out).
#
# Exits 1 with what disagreed. Needs go; takes about a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export PATH=/usr/local/go/bin:$PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/aegis-fuzz-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mod=$tmp/mod
mkdir -p "$mod/fuzz" "$mod/demo"
cp "$here/run.sh" "$mod/fuzz/run.sh"
cat >"$mod/go.mod" <<'EOF'
module example.com/fuzzdemo

go 1.26
EOF
cat >"$mod/demo/demo.go" <<'EOF'
package demo
EOF
cat >"$mod/demo/demo_test.go" <<'EOF'
package demo

import (
	"testing"
	"time"
)

func FuzzFine(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 0 {
			t.Fatal("impossible")
		}
	})
}

func FuzzCrash(f *testing.F) {
	f.Add([]byte("a"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= 2 {
			t.Fatalf("input of %d bytes", len(b))
		}
	})
}

func FuzzSlowSeeds(f *testing.F) {
	for _, s := range []string{"a", "b", "c", "d"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		time.Sleep(4 * time.Second)
	})
}
EOF

bad=0
# expect NAME WANT-EXIT PATTERN... -- ARGS: run run.sh ARGS, check its
# exit status and that its output matches each PATTERN (grep -E).
expect() {
	local name=$1 want=$2
	shift 2
	local pats=()
	while [ "$1" != -- ]; do
		pats+=("$1")
		shift
	done
	shift
	local out rc=0
	# Every run reports to its end, whatever failed.
	pats+=('^fuzz: corpus entries found so far are kept in')
	out=$(cd "$mod" && bash fuzz/run.sh "$@" 2>&1) || rc=$?
	if [ "$rc" != "$want" ]; then
		echo "FAIL $name: run.sh $* = exit $rc; want $want"
		echo "$out" | sed 's/^/    | /'
		bad=1
		return
	fi
	for p in "${pats[@]}"; do
		if ! grep -qE -- "$p" <<<"$out"; then
			echo "FAIL $name: run.sh $* output lacks /$p/"
			echo "$out" | sed 's/^/    | /'
			bad=1
			return
		fi
	done
	echo "ok   $name"
}

expect fine 0 '^FuzzFine +demo +[1-9]' -- -j 1 -p 1 -t '^FuzzFine$' 3s
expect crash 1 'FAILED' 'new failing input: demo/testdata/fuzz/FuzzCrash/' -- -j 1 -p 1 -t '^FuzzCrash$' 10s
rm -rf "$mod/demo/testdata"
expect never-fuzzed 1 'never fuzzed' -- -j 1 -p 1 -t '^FuzzSlowSeeds$' 3s

# -f: FuzzFine's cache holds three inputs; a run reads them first, a
# fresh run its one seed alone, and leaves the cache as it was.
fine_cache=$(go env GOCACHE)/fuzz/example.com/fuzzdemo/demo/FuzzFine
mkdir -p "$fine_cache"
for i in 1 2 3; do printf 'go test fuzz v1\n[]byte("cached %d")\n' $i >"$fine_cache/cached$i"; done
expect warm 0 '^FuzzFine +demo +[1-9]' -- -j 1 -p 1 -t '^FuzzFine$' -l "$tmp/warm" 3s
if ! grep -q 'gathering baseline coverage: 0/4 completed' "$tmp/warm/FuzzFine.log"; then
	echo "FAIL warm: the run did not read the cache's three inputs and the seed first"; bad=1
fi
rm -f "$fine_cache"/*
for i in 1 2 3; do printf 'go test fuzz v1\n[]byte("cached %d")\n' $i >"$fine_cache/cached$i"; done
expect fresh 0 '^FuzzFine +demo +[1-9]' 'each from its seed corpus alone' -- -j 1 -p 1 -t '^FuzzFine$' -f -l "$tmp/fresh" 3s
if ! grep -q 'gathering baseline coverage: 0/1 completed' "$tmp/fresh/FuzzFine.log"; then
	echo "FAIL fresh: the run read more than its one seed first"; bad=1
fi
if [ "$(ls "$fine_cache" | tr '\n' ' ')" != "cached1 cached2 cached3 " ]; then
	echo "FAIL fresh: the cache changed: $(ls "$fine_cache" | tr '\n' ' ')"; bad=1
fi
rm -rf "$fine_cache"

# A baseline cut short at 272 of 284 inputs in 8s, scripted: run.sh runs
# the target again for 8s beyond twice that pace (ceil(16.7) + 8 = 25s);
# the second run fuzzes (BASELINE_AGAIN=fuzz) or is cut short again.
cat >"$tmp/go-baseline" <<'EOF2'
#!/usr/bin/env bash
if [ "$1" != test ]; then exec go "$@"; fi
n=$(cat "$BASELINE_COUNT" 2>/dev/null || echo 0)
echo $((n + 1)) >"$BASELINE_COUNT"
for a; do case $a in -fuzztime) next=1 ;; *) if [ -n "${next:-}" ]; then echo "$a" >>"$BASELINE_COUNT.times"; next=; fi ;; esac; done
echo "fuzz: elapsed: 0s, gathering baseline coverage: 0/284 completed"
if [ "$n" -ge 1 ] && [ "$BASELINE_AGAIN" = fuzz ]; then
	echo "fuzz: elapsed: 9s, gathering baseline coverage: 284/284 completed, now fuzzing with 1 workers"
	echo "fuzz: elapsed: 12s, execs: 4242 (1414/sec), new interesting: 0 (total: 284)"
else
	echo "fuzz: elapsed: 8s, gathering baseline coverage: 272/284 completed"
fi
echo PASS
EOF2
chmod +x "$tmp/go-baseline"
export BASELINE_COUNT=$tmp/baseline-count
rm -f "$BASELINE_COUNT" "$BASELINE_COUNT.times"
FUZZ_GO=$tmp/go-baseline BASELINE_AGAIN=fuzz expect baseline-again 0 'its baseline outlasted 8s \(272/284 inputs by 8s, .*\); ran again for 25s' '^FuzzFine +demo +4242' -- -j 1 -p 1 -t '^FuzzFine$' 8s
if [ "$(tr '\n' ' ' <"$BASELINE_COUNT.times")" != "8s 25s " ]; then
	echo "FAIL baseline-again: go test ran with -fuzztime $(tr '\n' ' ' <"$BASELINE_COUNT.times"); want 8s then 25s"
	bad=1
fi
rm -f "$BASELINE_COUNT" "$BASELINE_COUNT.times"
FUZZ_GO=$tmp/go-baseline BASELINE_AGAIN=no expect baseline-never 1 'ran again for 25s' 'never fuzzed' -- -j 1 -p 1 -t '^FuzzFine$' 8s

# Go's deadline race, scripted: the go command prints what Go 1.26 prints
# then, and with DEADLINE_WRITES set also writes a failing input, as the
# coordinator does for a crasher it was minimising.
cat >"$tmp/go" <<'EOF'
#!/usr/bin/env bash
if [ "$1" != test ]; then exec go "$@"; fi
for a; do case $a in -fuzz) next=1 ;; *) if [ -n "${next:-}" ]; then target=${a#^}; target=${target%\$}; next=; fi ;; esac; done
echo "fuzz: elapsed: 0s, gathering baseline coverage: 1/1 completed, now fuzzing with 1 workers"
echo "fuzz: elapsed: 3s, execs: 4242 (1414/sec), new interesting: 0 (total: 1)"
if [ -n "${DEADLINE_WRITES:-}" ]; then
	mkdir -p "${@: -1}/testdata/fuzz/$target"
	echo "go test fuzz v1" >"${@: -1}/testdata/fuzz/$target/0123456789abcdef"
fi
echo "--- FAIL: $target (3.01s)"
echo "    context deadline exceeded"
echo "FAIL"
exit 1
EOF
chmod +x "$tmp/go"
export FUZZ_GO=$tmp/go
expect deadline-race 0 "stopped by Go's own deadline race" -- -j 1 -p 1 -t '^FuzzFine$' 3s
expect deadline-race-minimising 1 'FAILED' -- -j 1 -p 1 -m 5s -t '^FuzzFine$' 3s
export DEADLINE_WRITES=1
expect deadline-race-wrote 1 'new failing input: demo/testdata/fuzz/FuzzFine/0123456789abcdef' -- -j 1 -p 1 -t '^FuzzFine$' 3s
exit $bad
