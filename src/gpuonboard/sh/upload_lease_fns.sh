#!/bin/sh
# Shell functions the upload lease scripts share. `fsnow F`: the time now by the clock of the
# file system F is on (a new file `F.XXXXXX` made by mktemp, never through a name planted there,
# and removed; on NFS the mtime is the server's, not the host's `date`), `date` when none can be
# made. `live F NOW STALE [TOKEN]`: F is a lease (a token
# line; one without is a create cut short) refreshed less than STALE s before NOW and not TOKEN's:
# prints "busy <age s>" and its lines.
# Run by: uploadlock.py (LEASE_FNS), put before upload_take.sh, upload_peek.sh and upload_claim.sh,
# and teardown/uploads.py (before teardown_uploads_listing.sh: the age of a lease it finds).

fsnow() {
  n=$( t=$(mktemp -- "$1.XXXXXX") && stat -c %Y -- "$t"; rm -f -- "${t:-}" ) 2>/dev/null
  [ -n "$n" ] || n=$(date +%s); echo "$n"
}
live() {
  [ -f "$1" ] && grep -q '^token ' -- "$1" 2>/dev/null || return 1
  if [ -n "${4:-}" ] && grep -qxF "token $4" -- "$1" 2>/dev/null; then return 1; fi
  mod=$(stat -c %Y -- "$1" 2>/dev/null) || return 1
  [ $(($2 - mod)) -lt "$3" ] || return 1
  echo "busy $(($2 - mod))"; cat -- "$1"
}
