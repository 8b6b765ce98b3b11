#!/usr/bin/env bash
# Checks that each built tool starts: `BINARY --help` must exit 0 or print a
# usage text (some flag parsers exit 2 after printing it) within a minute.
#
# usage: hack/smoke.sh BINARY...
set -uo pipefail

status=0
for bin in "$@"; do
	out=$(timeout 60 "$bin" --help 2>&1 </dev/null)
	rc=$?
	if [[ $rc -eq 0 ]] || grep -qi 'usage' <<<"$out"; then
		echo "smoke ok: $(basename "$bin") --help (exit $rc)"
	else
		echo "smoke FAILED: $bin --help exited $rc:" >&2
		tail -n 20 <<<"$out" >&2
		status=1
	fi
done
exit $status
