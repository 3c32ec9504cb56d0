#!/usr/bin/env bash
# Runs the test tiers named as arguments one after another with $MAKE (make test), then prints
# each one's time and result. Like make, it stops at the first tier that fails, or runs the rest
# under make -k, and then exits with the status of the first failure.
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

status=0
rows=()
start_all=$(now)
for tier in "$@"; do
	start=$(now)
	"$make" --no-print-directory "$tier"
	rc=$?
	result=ok
	if ((rc != 0)); then
		result="FAILED (exit $rc)"
		if ((status == 0)); then status=$rc; fi
	fi
	rows+=("$(printf '%-20s %10s  %s' "$tier" "$(seconds $(($(now) - start)))" "$result")")
	if ((rc != 0)) && ! $keep_going; then break; fi
done

echo
printf '%-20s %10s  %s\n' tier time result
printf '%s\n' "${rows[@]}"
printf '%-20s %10s\n' total "$(seconds $(($(now) - start_all)))"
exit "$status"
