#!/bin/sh
# Marks a --decrypt-to plaintext dir as a copy's, or says why not (arguments and output: see
# uploadlock.CLAIM_SCRIPT).
# Run by: uploadlock.py (LEASE_FNS put before it).

c=$(cd -- "$1" && pwd -P)/$2 || exit 2
mkdir -p -- "$3" || exit 2
m=$3/.gpuonboard-copy
[ -d "$m" ] && { echo "$m is a directory, not gpuonboard's mark; remove it" >&2; exit 3; }
printf '%s\n' "$c" > "$m.$$" || { rm -f -- "$m.$$"; exit 2; }
new=0
if ln -- "$m.$$" "$m" 2>/dev/null; then new=1
elif [ ! -s "$m" ]; then rm -f -- "$m"; ln -- "$m.$$" "$m" 2>/dev/null && new=1; fi
rm -f -- "$m.$$"
have=$(head -n 1 -- "$m" 2>/dev/null)
[ "$have" = "$c" ] || { echo "other $have"; exit 0; }
undo() { if [ "$new" = 1 ]; then rm -f -- "$m"; fi; }
# an upload whose copy IS this dir, running now (its lease beside the dir, or inside it)
now=$(fsnow "$m.$$.now")
for l in "$(dirname -- "$3")/.$(basename -- "$3").gpuonboard-upload" "$3/.gpuonboard-upload"; do
  if live "$l" "$now" "$5" "$4"; then undo; exit 0; fi
done
# files there that no mark vouches for: another copy's, or an older gpuonboard's plaintext
# shellcheck disable=SC2010  # only whether any name but the mark is there: a name's odd bytes do not matter
if [ "$new" = 1 ] && [ -n "$(ls -A -- "$3" | grep -vxF .gpuonboard-copy | head -n 1)" ]; then
  undo; echo unmarked; exit 0
fi
echo "ours $c"
