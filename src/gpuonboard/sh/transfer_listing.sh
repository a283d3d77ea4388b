#!/bin/sh
# The upload's read-only listing probe of its target: rsync and zstd present?, free space under
# the data dir, where this login cannot write, what the target is (not a dir, a symlink), the
# sha256 of a manifest file in it, its copy mark, then every entry of the target as
# `TYPE SIZE MTIME PATH` records, NUL-terminated (rsync's partial files as `P`, empty dirs as `E`).
# Values in variables set before it (quoted by shell.quote): t the target, d the data dir, mf a
# manifest file's name in t ('' for none; else `sha_fn`, defining transfer.SHA256_FN's `sha`,
# is put before it),
# m the lines' mark, mark the copy mark's name, lease the lease's name in a copy, part rsync's
# partial dir.
# Run by: transfer.listing_command.
# shellcheck disable=SC2154  # t, d, mf, m, mark, lease, part: set by listing_command before this script

printf '%srsync %s\n' "$m" "$(command -v rsync || echo absent)"
printf '%szstd %s\n' "$m" "$(command -v zstd || echo absent)"
while [ ! -d "$d" ] && [ "$d" != / ]; do d=$(dirname -- "$d"); done
printf '%sdf\n' "$m"; df -P -k -- "$d" 2>/dev/null | tail -n 1
# where this login cannot write: the nearest existing dir of the data dir (the lease, the copy
# and an unpack's temp tree go in it), or the target itself
{ [ -w "$d" ] && [ -x "$d" ]; } || printf '%snowrite %s\n' "$m" "$d"
[ -d "$t" ] && [ ! -L "$t" ] && { [ ! -w "$t" ] || [ ! -x "$t" ]; } && printf '%snowrite %s\n' "$m" "$t"
{ [ -e "$t" ] || [ -L "$t" ]; } && [ ! -d "$t" ] && printf '%snotdir\n' "$m"
[ -L "$t" ] && printf '%slink %s\n' "$m" "$(readlink -- "$t")"
[ -n "$mf" ] && [ -f "$t/$mf" ] && { sha_fn; printf '%smanifest %s\n' "$m" "$(sha < "$t/$mf")"; }
[ -f "$t/$mark" ] && printf '%scopy %s\n' "$m" "$(head -n 1 -- "$t/$mark")"
[ -d "$t/$mark" ] && printf '%smarkdir\n' "$m"
printf '%slist\n' "$m"
[ -d "$t" ] || exit 0
# (rsync's partial files as `P` records: what a resumed transfer starts from, which the
# preflight counts as already there; the partial dir itself is no directory of the copy)
cd -- "$t" && find . \( -path "./$lease" -o -path "./$mark" \) -prune \
  -o -path "*/$part/*" \( -type f -printf 'P %s %T@ %P\0' -o -prune \) \
  -o -name "$part" -o -type d -empty -printf 'E %s %T@ %P\0' -o -printf '%y %s %T@ %P\0'
exit 0
