#!/bin/sh
# Shell functions the upload lease scripts share. `fsnow F`: the time now by the clock of the
# file system F is on (F made and removed; on NFS the mtime is the server's, not the host's
# `date`), `date` when F cannot be made. `live F NOW STALE [TOKEN]`: F is a lease (a token
# line; one without is a create cut short) refreshed less than STALE s before NOW and not TOKEN's:
# prints "busy <age s>" and its lines.
# Run by: uploadlock.py (LEASE_FNS), put before upload_take.sh, upload_peek.sh and upload_claim.sh.

fsnow() {
  n=$( : > "$1" && stat -c %Y -- "$1" ) 2>/dev/null; rm -f -- "$1"
  [ -n "$n" ] || n=$(date +%s); echo "$n"
}
live() {
  [ -f "$1" ] && grep -q '^token ' -- "$1" 2>/dev/null || return 1
  if [ -n "${4:-}" ] && grep -qxF "token $4" -- "$1" 2>/dev/null; then return 1; fi
  mod=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
  [ $(($2 - mod)) -lt "$3" ] || return 1
  echo "busy $(($2 - mod))"; cat -- "$1"
}
