#!/usr/bin/env bash
# Runs the test tiers named as arguments one after another with $MAKE (make test), then prints
# each one's time and result. Like make, it stops at the first tier that fails, or runs the rest
# under make -k, and then exits with the status of the first failure. make test installs nothing:
# on a host with dpkg, it fails when the tiers changed the list of installed packages.
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

status=0
rows=()
before=$(packages)
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
after=$(packages)
if [[ $before != "$after" ]]; then
	echo "make test changed the host's packages (make test-deps installs them, make test never):"
	diff <(echo "$before") <(echo "$after")
	if ((status == 0)); then status=1; fi
elif [[ -n $before ]]; then
	echo "the host's packages are as before: $(wc -l <<<"$before") installed"
fi
exit "$status"
