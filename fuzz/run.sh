#!/usr/bin/env bash
# fuzz/run.sh — run every fuzz target of aegis for a given time each.
#
#   fuzz/run.sh [-j JOBS] [-p WORKERS] [-m MINIMIZE] [-t REGEXP] [-f] [-s] [-l DIR] DURATION
#
# DURATION is a go test -fuzztime: 30s, 10m, 12h, or 100000x (executions).
# Every FuzzXxx in the module (found in the test files go list names) is run with
# go test -fuzz for DURATION, JOBS targets at a time (default: as many as
# there are cores, at most one per target), each with WORKERS worker
# processes (default: the cores divided among the jobs). Every target
# first runs its seed corpus (testdata/fuzz/FuzzXxx and its f.Add seeds).
#
# New corpus entries are kept in Go's fuzz cache,
# $(go env GOCACHE)/fuzz/<package>/<FuzzXxx>/, and used by the next run:
# a long campaign is many runs of this script on one machine. With -s,
# the entries this run added are also copied into the package's
# testdata/fuzz/<FuzzXxx>/ (review and trim them before committing).
#
# For each target it prints executions per second (the average over the
# run, minimisation included), the seconds during which new inputs were
# queued for or under minimisation, the entries it found and the corpus
# size; for a failure, the crasher Go wrote to testdata/fuzz/<FuzzXxx>/
# and the command that reproduces it. Full logs are kept in DIR (-l; default a new temporary
# directory). Exits 1 if any target failed: go test failed, a new failing
# input appeared in testdata/fuzz/<FuzzXxx>/, or the target never fuzzed
# (no execution after its seed corpus's baseline coverage; a baseline
# that outlasts DURATION with progress to measure runs once more, longer).
#
#   -j JOBS      targets run at once (default: the core count)
#   -p WORKERS   worker processes per target (default: cores / JOBS, at least 1)
#   -m MINIMIZE  -fuzzminimizetime for new inputs and crashers (default:
#                0, off, for a DURATION under a minute; 10s otherwise)
#   -t REGEXP    only targets whose name matches (default: all)
#   -f           fresh: each target starts from its seed corpus alone (testdata/fuzz/
#                and its f.Add seeds), not the fuzz cache, whose inputs Go would
#                otherwise read first within DURATION; what the run finds
#                stays in DIR/cache/<FuzzXxx>/ (-s copies it into testdata),
#                so that the cache, and a run's time, do not grow with the
#                runs a machine has made (CI's)
#   -s           copy the new corpus entries into testdata/fuzz/
#   -l DIR       keep the logs in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
# The go command that fuzzes (fuzz/run_test.sh puts a scripted one here).
gocmd=${FUZZ_GO:-go}
jobs="" workers="" minimize="" only="." save=0 logs="" fresh=0
usage() { sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
while getopts "j:p:m:t:fsl:h" opt; do
	case $opt in
	j) jobs=$OPTARG ;;
	p) workers=$OPTARG ;;
	m) minimize=$OPTARG ;;
	t) only=$OPTARG ;;
	f) fresh=1 ;;
	s) save=1 ;;
	l) logs=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
duration=$1

# secs DURATION: a Go duration (1h2m3.5s, 10s, 500ms) in seconds.
secs() {
	awk -v d="$1" 'BEGIN { s = 0; while (match(d, /^[0-9.]+(ms|[hms])/)) { v = substr(d, 1, RLENGTH - 1); u = substr(d, RLENGTH, 1)
		if (substr(d, RLENGTH - 1, 2) == "ms") { v = substr(d, 1, RLENGTH - 2); u = "ms" }
		s += v * (u == "h" ? 3600 : u == "m" ? 60 : u == "ms" ? 0.001 : 1); d = substr(d, RLENGTH + 1) } print s }'
}

# A worker that minimises an input does not fuzz meanwhile, and a fresh
# run finds new inputs at once, one from nearly every seed, which wait
# their turn: minimisation fills a run of seconds (CI's) whatever its
# budget, and the inputs still waiting when the run ends are not added
# to the corpus. Off, every new input goes into the corpus as found.
if [ -z "$minimize" ]; then
	if [[ $duration != *x ]] && [ "$(awk -v s="$(secs "$duration")" 'BEGIN { print (s < 60) }')" = 1 ]; then
		minimize=0
	else
		minimize=10s
	fi
fi

# The product's module (go.work also names bench's and interop's, which hold no
# fuzz targets).
module=$(GOWORK=off go list -m)
cache=$(go env GOCACHE)/fuzz
logs=${logs:-$(mktemp -d "${TMPDIR:-/tmp}/aegis-fuzz.XXXXXX")}
mkdir -p "$logs"

# Find the targets: "pkg Target" per line, read from the test files go
# list names for each package (those this system builds): a fuzz target
# is a top-level func FuzzXxx(f *testing.F). (go test -list would first
# compile and link every test binary, only to name them.)
targets=()
while read -r pkg dir files; do
	[ -n "$files" ] || continue
	for t in $(cd "$dir" && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)([A-Za-z_][A-Za-z0-9_]* \*testing\.F).*/\1/p' $files | sort); do
		if [[ $t =~ $only ]]; then targets+=("$pkg $t"); fi
	done
done < <(go list -f '{{.ImportPath}} {{.Dir}} {{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...)
if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no fuzz targets match '$only'" >&2
	exit 1
fi

n=${#targets[@]}
jobs=${jobs:-$((cores < n ? cores : n))}
workers=${workers:-$((cores / jobs > 0 ? cores / jobs : 1))}
mintext="minimising new inputs for up to ${minimize} each" minoff=0
if [ "$(awk -v s="$(secs "$minimize")" 'BEGIN { print (s == 0) }')" = 1 ] && [[ $minimize != *x ]] || [ "$minimize" = 0x ]; then
	mintext="not minimising" minoff=1
fi
fromtext=""
if [ "$fresh" = 1 ]; then fromtext=", each from its seed corpus alone"; fi
echo "fuzz: ${n} targets, ${duration} each${fromtext}, ${jobs} at a time with ${workers} worker(s) each, ${mintext}; logs in ${logs}"

# attempt PKG TARGET FUZZTIME: one go test -fuzz of the target for
# FUZZTIME into its log; sets rc to its verdict (0 a pass, 1 a failure)
# and nofuzz to 1 when the run never got past its seed corpus.
attempt() {
	local pkg=$1 target=$2 fuzztime=$3
	local rel=./${pkg#"$module"/}
	local log=$logs/$target.log
	local seeds=$rel/testdata/fuzz/$target
	rc=0 nofuzz=0
	# -f: the test binary reads and writes a cache folder of this run's
	# own (the go command passes its -test.fuzzcachedir first; the binary
	# takes the last one given).
	local fresh_args=()
	if [ "$fresh" = 1 ]; then
		fresh_args=(-args "-test.fuzzcachedir=$logs/cache")
	fi
	# fuzzdebug=1 makes the coordinator log, with timestamps, when it
	# sends an input to be minimised and when the result comes back:
	# the report's "minimizing" column.
	GODEBUG=fuzzdebug=1${GODEBUG:+,$GODEBUG} "$gocmd" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" \
		-parallel "$workers" "$rel" ${fresh_args[@]+"${fresh_args[@]}"} >"$log" 2>&1 || rc=$?
	# Go's fuzzing coordinator can report its own -fuzztime deadline as
	# a failure ("context deadline exceeded", no input written) when a
	# worker is mid-execution as the time runs out: go.dev/issue/75804.
	# The target ran its whole budget and no input failed, so that one
	# signature is a pass, and the report says so; but only with
	# minimisation off: a crasher being minimised as the time runs out
	# is written after that same message.
	if [ $rc != 0 ] && [ $minoff = 1 ] && ! grep -q 'Failing input written' "$log" &&
		[ "$(grep -v ' DEBUG ' "$log" | grep -A1 -E '^--- FAIL' | sed -n '2p' | tr -d '[:space:]')" = contextdeadlineexceeded ] &&
		[ "$(grep -cE '^--- FAIL' "$log")" = 1 ] && [[ $fuzztime != *x ]]; then
		touch "$logs/$target.deadline"
		rc=0
	fi
	# Go writes a failing input to testdata/fuzz/<FuzzXxx>/, whatever the
	# log says: any file new there is a failure.
	ls "$seeds" 2>/dev/null | comm -13 "$logs/$target.seeds" - >"$logs/$target.crashers" || true
	if [ -s "$logs/$target.crashers" ]; then
		rc=1
	fi
	# A run that never got past its seed corpus (baseline coverage) did
	# not fuzz: it checked the seeds, which go test does anyway.
	if [ $rc = 0 ] && ! grep -qE '^fuzz: elapsed: .*execs: [1-9]' "$log"; then
		nofuzz=1
		rc=1
	fi
}

# baseline_budget LOG: seconds enough for the baseline a run cut short
# in LOG ("fuzz: elapsed: 8s, gathering baseline coverage: 272/284
# completed"): twice the time its rate so far would take for them all,
# or 0 when the log shows no progress to extrapolate from.
baseline_budget() {
	grep -E '^fuzz: elapsed: .*gathering baseline coverage: [0-9]+/[0-9]+' "$1" | tail -1 |
		sed -nE 's/^fuzz: elapsed: ([^,]+), gathering baseline coverage: ([0-9]+)\/([0-9]+).*/\1 \2 \3/p' |
		while read -r elapsed done total; do
			awk -v s="$(secs "$elapsed")" -v d="$done" -v t="$total" 'BEGIN { if (d > 0 && s > 0) { b = 2 * s * t / d; printf "%d", (b == int(b)) ? b : int(b) + 1 } else print 0 }'
		done
}

# run PKG TARGET: fuzz one target, write its log, a marker of the cache
# entries that existed before, and its verdict. Go counts the seed
# corpus's baseline (the testdata seeds, the f.Add seeds and every
# input the fuzz cache kept from earlier runs) inside -fuzztime, and the
# cache grows with each run on a machine: a run whose baseline outlasted
# DURATION runs once more, for DURATION beyond twice its baseline's
# pace, and the report says so. A target that fuzzes then passes; one
# whose baseline outlasts that too, or that made no progress to measure,
# never fuzzed and fails.
run() {
	local pkg=$1 target=$2 dir=${cache}/$1/$2
	local rel=./${pkg#"$module"/}
	local seeds=$rel/testdata/fuzz/$target
	mkdir -p "$dir"
	ls "$dir" >"$logs/$target.before"
	ls "$seeds" 2>/dev/null >"$logs/$target.seeds" || true
	echo "fuzz: start $target ($rel)"
	local rc nofuzz
	attempt "$pkg" "$target" "$duration"
	if [ $nofuzz = 1 ] && [[ $duration != *x ]]; then
		local base
		base=$(baseline_budget "$logs/$target.log")
		if [ -n "$base" ] && [ "$base" != 0 ]; then
			local again
			again=$(awk -v b="$base" -v d="$(secs "$duration")" 'BEGIN { d = (d == int(d)) ? d : int(d) + 1; printf "%ds", b + d }')
			cp "$logs/$target.log" "$logs/$target.first.log"
			grep -E '^fuzz: elapsed: .*gathering baseline coverage' "$logs/$target.first.log" | tail -1 |
				sed -E 's/^fuzz: elapsed: ([^,]+), gathering baseline coverage: ([0-9]+\/[0-9]+).*/\2 \1/' >"$logs/$target.again"
			echo "$again" >>"$logs/$target.again"
			echo "fuzz: again $target for $again (its baseline outlasted $duration)"
			attempt "$pkg" "$target" "$again"
		fi
	fi
	if [ $nofuzz = 1 ]; then
		touch "$logs/$target.nofuzz"
	fi
	echo $rc >"$logs/$target.rc"
	echo "fuzz: done  $target (exit $rc)"
}

running=0
for t in "${targets[@]}"; do
	if [ $running -ge "$jobs" ]; then
		wait -n || true
		running=$((running - 1))
	fi
	run $t &
	running=$((running + 1))
done
wait || true

# Report.
failed=0
printf '\n%-20s %-15s %10s %10s %8s %11s %6s %7s\n' target package execs "execs/sec" elapsed minimizing new corpus
for t in "${targets[@]}"; do
	read -r pkg target <<<"$t"
	rel=./${pkg#"$module"/}
	log=$logs/$target.log
	rc=$(cat "$logs/$target.rc" 2>/dev/null || echo 1)
	# The last progress line: "fuzz: elapsed: 1m0s, execs: 63261 (0/sec), new interesting: 29 (total: 41)".
	last=$(grep -E '^fuzz: elapsed: .*execs: ' "$log" | tail -1 || true)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	elapsed=$(sed -nE 's/^fuzz: elapsed: ([^,]+),.*/\1/p' <<<"$last")
	new=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	total=$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$last")
	rate=$(awk -v e="${execs:-0}" -v s="$(secs "${elapsed:-0s}")" 'BEGIN { if (s > 0) printf "%d", e / s; else print "-" }')
	# Seconds during which an input was queued for or under minimisation,
	# from the coordinator's timestamps: each from when it is queued, or
	# when the one before it comes back if that is later (one is
	# minimised at a time), until it comes back; one the end of the run
	# cut short, until the log's last timestamp. Workers may fuzz while an
	# input waits, so this bounds the time minimisation took from above.
	minimizing=$(awk '
		/ DEBUG / { split($2, c, ":"); t = c[1] * 3600 + c[2] * 60 + c[3]; if (last != "" && t < last) t += 86400; last = t }
		/ DEBUG queueing input for minimization/ && match($0, /id: [^,]+/) { q[substr($0, RSTART + 4, RLENGTH - 4)] = t }
		/ DEBUG input minimized/ && match($0, /original id: [^,]+/) {
			id = substr($0, RSTART + 13, RLENGTH - 13); s = (id in q) ? q[id] : t; delete q[id]
			if (s < end) s = end
			busy += t - s; end = t }
		END { first = ""; for (id in q) if (first == "" || q[id] < first) first = q[id]
			if (first != "") { if (first < end) first = end; if (last > first) busy += last - first }
			printf "%.1fs", busy }' "$log")
	printf '%-20s %-15s %10s %10s %8s %11s %6s %7s\n' "$target" "${rel#./}" "${execs:--}" "$rate" "${elapsed:--}" "$minimizing" "${new:--}" "${total:--}"
	if [ "$save" = 1 ]; then
		dir=$cache/$pkg/$target before=$logs/$target.before
		if [ "$fresh" = 1 ]; then dir=$logs/cache/$target before=/dev/null; fi
		dst=${rel#./}/testdata/fuzz/$target
		mkdir -p "$dst"
		copied=0
		for f in $(ls "$dir" 2>/dev/null | comm -13 "$before" -); do
			cp "$dir/$f" "$dst/$f"
			copied=$((copied + 1))
		done
		echo "    saved $copied new entries to $dst"
	fi
	if [ -e "$logs/$target.again" ]; then
		{ read -r progress at; read -r again; } <"$logs/$target.again"
		echo "    its baseline outlasted $duration ($progress inputs by $at, the fuzz cache's inputs included); ran again for $again: $logs/$target.first.log"
	fi
	if [ -e "$logs/$target.deadline" ]; then
		echo "    stopped by Go's own deadline race (go.dev/issue/75804), not by an input: $log"
	fi
	if [ "$rc" != 0 ]; then
		failed=1
		echo "    FAILED: $log"
		if [ -e "$logs/$target.nofuzz" ]; then
			echo "    never fuzzed: no execution after the seed corpus's baseline coverage (a longer DURATION, or fewer targets at once)"
		fi
		while read -r f; do
			echo "    new failing input: ${rel#./}/testdata/fuzz/$target/$f"
		done <"$logs/$target.crashers"
		grep -E -A3 '^--- FAIL|^\s+(fuzz_test|.*_test)\.go:[0-9]+:' "$log" | head -20 | sed 's/^/    | /' || true
		crasher=$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$log" | tail -1)
		if [ -n "$crasher" ]; then
			echo "    crasher: ${rel#./}/$crasher"
			echo "    reproduce: go test -run=${crasher#testdata/fuzz/} $rel"
		else
			echo "    (no crasher written: the seed corpus failed, a build failed, or the run was cut short; see the log)"
			seed=$(grep -oE -- "--- FAIL: ${target}/[^ ]+" "$log" | head -1 | sed 's/--- FAIL: //' || true)
			if [ -n "$seed" ]; then echo "    reproduce: go test -run=$seed $rel"; fi
		fi
	fi
done
echo "fuzz: corpus entries found so far are kept in $cache/<package>/<target>"
exit $failed
