#!/bin/sh
# $1 stale seconds, then the places a lease of a copy may be: read only (check mode).
# Prints "busy <age s>" and the lease's lines for a live one, else nothing.
# Run by: uploadlock.peek_command (LEASE_FNS put before it).

s=$1; shift; now=$(date +%s)  # (it writes nothing: the host's clock)
for f in "$@"; do live "$f" "$now" "$s" && exit 0; done
exit 0
