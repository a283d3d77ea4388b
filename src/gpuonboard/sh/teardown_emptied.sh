#!/bin/sh
# Empties a configured dir (vars.dataset_dir, vars.decrypted_dir) only of what gpuonboard's
# uploads wrote there and that is unchanged since: each file and symlink whose entry (path, size,
# whole-second mtime) the list of what uploads wrote (uploadlock.WRITTEN_DIR) holds, of the dir
# itself or of an upload tree recorded inside it (uploadlock.UPLOADS_RECORD), and gpuonboard's
# own files in such a tree (its copy mark, a lease kept in it, a clock probe left); the rest (a
# job's checkpoint, a file of the user's, a dataset file changed since) stays, and the dir with it.
# act=probe prints `theirs NAMES` (other machines whose list covers a tree here: then nothing
# goes), `lists N` (trees whose list is there), `remove N` (files and symlinks it would remove), `kept N BYTES CHANGED` (those
# it keeps; CHANGED of them are listed as written but differ now), up to 3 `new SIZE PATH` and
# up to 3 `changed SIZE PATH`, then `store N BYTES PATH` per store an upload recorded in it (N entries kept
# there, BYTES), each NUL-terminated; act=remove removes them (the lists compared
# again right before), then the dirs left empty in it, then the dir when it is empty.
# Values set before it: r the dir (resolved), act; w, u, written(), current(), cutm() and shared() as
# in uploadlock (WRITTEN_DIR, UPLOADS_RECORD, WRITTEN_FN, CURRENT_LISTING_FN, MTIME_CUT, SHARED_FS_FN); mark,
# inlease, fsleft the names of gpuonboard's own files in a tree (COPY_MARK, LEASE_IN_COPY,
# FSNOW_LEFT). Reads only, but for act=remove. Run by: steps/teardown/emptied.py.
# shellcheck disable=SC2154  # r, act, w, u, mark, inlease, fsleft: set by the module before this script

# every file, symlink and other non-dir in $r: `F SIZE MTIME PATH`, `l 0 PATH`, `? 0 PATH`, sorted
everything() {
  find "$r" -mindepth 1 \( -type f -printf 'F %s %T@ %p\0' \) -o \( -type l -printf 'l 0 %p\0' \) \
    -o \( ! -type d -printf '? 0 %p\0' \) 2>/dev/null | cutm | LC_ALL=C sort -z
}
# the trees whose list of what uploads wrote is there: $r itself, and those recorded inside it
trees() {
  { printf '%s\n' "$r"; [ -f "$u" ] && tr '\0' '\n' < "$u"; } | while IFS= read -r t; do
    case $t in "$r" | "$r"/*) f=$(written "$t"); [ -f "$f" ] && ! [ -e "$f.stale" ] && printf '%s\n' "$t" ;; esac
  done | LC_ALL=C sort -u
}
# the stores (X.shards, X.encrypted) this machine's uploads recorded in $r: they hold no list of
# what the upload wrote in them, so they stay (named as the upload's, not as files no upload wrote)
stores() {
  [ -f "$u" ] || return 0
  tr '\0' '\n' < "$u" | while IFS= read -r t; do
    case $t in "$r"/*.shards | "$r"/*.encrypted) [ -d "$t" ] && ! [ -L "$t" ] && printf '%s\n' "$t" ;; esac
  done | LC_ALL=C sort -u
}
# NUL-terminated paths on stdin: those in no recorded store
outside_stores() {
  set --
  while IFS= read -r s; do [ -n "$s" ] && set -- "$@" -e "$s/"; done <<EOF
$(stores)
EOF
  if [ $# -gt 0 ]; then grep -z -v -F "$@"; else cat; fi
}
# the other machines sharing this home (NFS) whose list of what uploads wrote covers one of those
# trees (`written.NAME`, NAME their host name): the dir is theirs too, in use there maybe; only
# where $r is on a filesystem other machines may see (shared): on a local disk such a list is a
# stale one (a cloned image's, a machine whose `uname -n` changed)
theirs() {
  shared "$r" || return 0
  trees | while IFS= read -r t; do
    f=$(written "$t")
    for o in "${w%/*}"/written.*/"${f##*/}"; do
      if [ "$o" != "$f" ] && [ -f "$o" ] && ! [ -e "$o.stale" ]; then
        o=${o%/*}; printf '%s\n' "${o##*/written.}"
      fi
    done
  done | LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}
# `listed unchanged`: what uploads wrote in $r as it is now, entries as everything() prints them;
# `listed all`: the paths of every entry of the lists (written, whether unchanged or not)
listed() {
  trees | while IFS= read -r t; do
    f=$(written "$t"); e=$(printf '%s/' "${t%/}" | sed 's/[\\&|]/\\&/g')
    if [ "$1" = all ]; then cat -- "$f"; else
      current "$t" | LC_ALL=C comm -z -12 - "$f"
      find "$t" -mindepth 1 -maxdepth 1 -type f \( -name "$mark" -o -name "$inlease" -o -name "$fsleft" \) \
        -printf 'F %s %T@ %P\0' 2>/dev/null | cutm
    fi | sed -z "s|^\\(F [0-9]* -\\{0,1\\}[0-9]* \\)|\\1$e|; t; s|^\\([fl] [0-9]* \\)|\\1$e|"
  done | if [ "$1" = all ]; then sed -z 's/^F [0-9]* -\{0,1\}[0-9]* //; t; s/^[fl] [0-9]* //'; else cat; fi \
    | LC_ALL=C sort -zu
}
paths() { sed -z 's/^F [0-9]* -\{0,1\}[0-9]* //; t; s/^[l?] 0 //'; }
# what goes (in the dir and in the lists as they stand now) and what stays (in the dir alone)
both() { { everything; listed unchanged; } | LC_ALL=C sort -z | uniq -z -d; }
kept() { { everything; listed unchanged; listed unchanged; } | LC_ALL=C sort -z | uniq -z -u; }

if [ "$act" = remove ]; then
  [ -n "$(theirs)" ] && exit 0  # (another machine's upload there since the probe: left whole)
  both | paths | xargs -0 -r rm -f -- 2>/dev/null
  find "$r" -depth -mindepth 1 -type d -empty -delete 2>/dev/null
  rmdir -- "$r" 2>/dev/null
  true
else
  printf 'theirs %s\0' "$(theirs)"
  printf 'lists %s\0' "$(trees | wc -l)"
  printf 'remove %s\0' "$(both | tr -cd '\0' | wc -c)"
  changed=$({ kept | paths; listed all; } | LC_ALL=C sort -z | uniq -z -d | tr -cd '\0' | wc -c)
  kept | sed -z 's/^F \([0-9]*\) .*/\1/; t; s/.*/0/' | tr '\0' '\n' \
    | awk -v c="$changed" '{ n++; s += $1 } END { printf "kept %d %.0f %d", n, s, c }'
  printf '\0'
  # per recorded store: `store N BYTES PATH`, the kept entries in it (none changed: no list has them)
  stores | while IFS= read -r s; do
    kept | tr '\0' '\n' | S="$s/" awk '{ p = $0; sub(/^F [0-9]+ -?[0-9]+ /, "", p); sub(/^[l?] 0 /, "", p) }
      index(p, ENVIRON["S"]) == 1 { n++; if ($1 == "F") b += $2 } END { printf "store %d %.0f ", n, b }'
    printf '%s\0' "$s"
  done
  { kept | paths; listed all; listed all; } | LC_ALL=C sort -z | uniq -z -u | outside_stores | head -z -n 3 \
    | xargs -0 -r stat --printf 'new %s %n\0' -- 2>/dev/null
  { kept | paths; listed all; } | LC_ALL=C sort -z | uniq -z -d | head -z -n 3 \
    | xargs -0 -r stat --printf 'changed %s %n\0' -- 2>/dev/null
  true
fi
