#!/usr/bin/env bash
# Runs the test tiers named as arguments one after another with $MAKE (make test), then prints
# each one's time, how much it compiled (what the Go build cache grew by: compiled packages, linked
# test binaries, test results) and result. Like make, it stops at the first tier that fails, or
# runs the rest under make -k, and then exits with the status of the first failure. make test
# installs nothing: on a host with dpkg, it fails when the tiers changed the list of installed
# packages.
set -uo pipefail

make=${MAKE:-make}
# The single-letter flags of make, the first word of MAKEFLAGS unless that is a long option.
flags=${MAKEFLAGS:-}
flags=${flags%% *}
keep_going=false
if [[ $flags != -* && $flags == *k* ]]; then keep_going=true; fi

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

# cache_kib prints the size of the Go build cache in KiB, 0 when there is none.
gocache=$(go env GOCACHE 2>/dev/null)
cache_kib() {
	if [[ -n $gocache && -d $gocache ]]; then du -sk "$gocache" | cut -f1; else echo 0; fi
}
# mib formats a difference in KiB as MB.
mib() { printf '%d MB' $(($1 / 1024)); }

status=0
rows=()
before=$(packages)
start_all=$(now)
cache_all=$(cache_kib)
for tier in "$@"; do
	start=$(now)
	cache=$(cache_kib)
	"$make" --no-print-directory "$tier"
	rc=$?
	result=ok
	if ((rc != 0)); then
		result="FAILED (exit $rc)"
		if ((status == 0)); then status=$rc; fi
	fi
	rows+=("$(printf '%-20s %10s %10s  %s' "$tier" "$(seconds $(($(now) - start)))" "$(mib $(($(cache_kib) - cache)))" "$result")")
	if ((rc != 0)) && ! $keep_going; then break; fi
done

echo
printf '%-20s %10s %10s  %s\n' tier time compiled result
printf '%s\n' "${rows[@]}"
printf '%-20s %10s %10s\n' total "$(seconds $(($(now) - start_all)))" "$(mib $(($(cache_kib) - cache_all)))"
after=$(packages)
if [[ $before != "$after" ]]; then
	echo "make test changed the host's packages (make test-deps installs them, make test never):"
	diff <(echo "$before") <(echo "$after")
	if ((status == 0)); then status=1; fi
elif [[ -n $before ]]; then
	echo "the host's packages are as before: $(wc -l <<<"$before") installed"
fi
exit "$status"
