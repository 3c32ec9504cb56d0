#!/usr/bin/env bash
# Runs the test tiers named as arguments with $MAKE (make test), then prints each one's time, how
# much was compiled while it ran (what the Go build cache grew by: compiled packages, linked test
# binaries, test results) and result.
#
# The arguments are lanes separated by "--": the tiers of one lane run one after another, the lanes
# at the same time, each tier's output streamed with its name in front of every line. The lanes
# share the build cache, so a tier's "compiled" includes what the other lane compiled meanwhile;
# the table says which lane ran the tier and when it started. Like make, a lane stops at the first
# tier that fails, and after a failure no lane starts another tier, or all run on under make -k;
# the exit status is that of the first failure. make test installs nothing: on a host with dpkg,
# it fails when the tiers changed the list of installed packages.
set -uo pipefail

make=${MAKE:-make}
# The single-letter flags of make, the first word of MAKEFLAGS unless that is a long option.
flags=${MAKEFLAGS:-}
flags=${flags%% *}
keep_going=false
if [[ $flags != -* && $flags == *k* ]]; then keep_going=true; fi
# Under make -n the tiers' makes print their commands and compile nothing: the build cache is not
# measured then (du reads every file of it, twice a tier: 8 CPU-seconds a run of make -n test).
dry_run=false
if [[ $flags != -* && $flags == *n* ]]; then dry_run=true; fi

now() { date +%s%N; }
# seconds formats nanoseconds as seconds with one decimal, or minutes and seconds from a minute up.
seconds() {
	local tenths=$(($1 / 100000000))
	if ((tenths >= 600)); then
		printf '%dm%02ds' $((tenths / 600)) $((tenths % 600 / 10))
	else
		printf '%d.%ds' $((tenths / 10)) $((tenths % 10))
	fi
}

# packages lists the host's installed Debian packages with their versions; nothing without dpkg.
packages() {
	if command -v dpkg-query >/dev/null; then
		dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' | sort
	fi
}

# cache_kib prints the size of the Go build cache in KiB, 0 when there is none or under make -n.
gocache=$(go env GOCACHE 2>/dev/null)
cache_kib() {
	if ! $dry_run && [[ -n $gocache && -d $gocache ]]; then du -sk "$gocache" 2>/dev/null | cut -f1; else echo 0; fi
}
# mib formats a difference in KiB as MB.
mib() { printf '%d MB' $(($1 / 1024)); }

# The lanes: lanes[i] is a space-separated list of tiers.
lanes=()
current=""
for arg in "$@"; do
	if [[ $arg == -- ]]; then
		lanes+=("$current")
		current=""
	else
		current+="${current:+ }$arg"
	fi
done
lanes+=("$current")

state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT

before=$(packages)
start_all=$(now)
cache_all=$(cache_kib)

# run_lane runs the tiers of lane $1 one after another, writing a row per tier into $state/row.<lane>.<n>
# and the exit status of a failed tier into $state/failed (the first one wins).
run_lane() {
	local lane=$1 n=0 tier start cache rc result
	shift
	for tier in "$@"; do
		if [[ -e $state/failed ]] && ! $keep_going; then break; fi
		start=$(now)
		cache=$(cache_kib)
		if ((${#lanes[@]} > 1)); then
			"$make" --no-print-directory "$tier" 2>&1 | sed -u "s/^/[$tier] /"
			rc=${PIPESTATUS[0]}
		else
			"$make" --no-print-directory "$tier"
			rc=$?
		fi
		result=ok
		if ((rc != 0)); then
			result="FAILED (exit $rc)"
			(set -o noclobber; echo "$rc" >"$state/failed") 2>/dev/null
		fi
		# The row, after the offset at which the tier started (for sorting).
		printf '%d\t%-20s %4s %8s %10s %10s  %s\n' $((start - start_all)) "$tier" "$lane" "$(seconds $((start - start_all)))" \
			"$(seconds $(($(now) - start)))" "$(mib $(($(cache_kib) - cache)))" "$result" >"$state/row.$lane.$n"
		n=$((n + 1))
		if ((rc != 0)) && ! $keep_going; then break; fi
	done
}

pids=()
for i in "${!lanes[@]}"; do
	# shellcheck disable=SC2086 # a lane is a list of tier names
	run_lane $((i + 1)) ${lanes[$i]} &
	pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done

echo
printf '%-20s %4s %8s %10s %10s  %s\n' tier lane started time compiled result
# The rows in the order the tiers started.
cat "$state"/row.* 2>/dev/null | sort -n | cut -f2-
printf '%-20s %4s %8s %10s %10s\n' total "" "" "$(seconds $(($(now) - start_all)))" "$(mib $(($(cache_kib) - cache_all)))"
status=0
if [[ -e $state/failed ]]; then status=$(cat "$state/failed"); fi
after=$(packages)
if [[ $before != "$after" ]]; then
	echo "make test changed the host's packages (make test-deps installs them, make test never):"
	diff <(echo "$before") <(echo "$after")
	if ((status == 0)); then status=1; fi
elif [[ -n $before ]]; then
	echo "the host's packages are as before: $(wc -l <<<"$before") installed"
fi
exit "$status"
