#!/bin/sh
# The sha256 of each path given as an argument (relative to the current dir), one line each, in
# order: "F HASH" for a file (its content), "L HASH" for a symlink (its target's path), "missing",
# "unreadable" (a file it cannot read: no digest, so it differs).
# Run by: transfer/verify (HASH_SCRIPT), once per xargs batch of the names on stdin. A batch of
# regular files only (no link, no line break or backslash in a name: the common dataset) is hashed
# by ONE process, its lines read back in order (one per file, checked by that process's exit
# status); any other batch file by file, content through stdin so that no name is parsed back.
# One process per file cost ~7 ms of fork and exec each: 50,000 small files took minutes.

if command -v openssl >/dev/null 2>&1 && openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then
  sha() { openssl dgst -sha256 -r "$@"; }  # (SHA-NI: about 3x faster than sha256sum)
else
  sha() { sha256sum "$@"; }
fi
nl='
'
plain_files() {
  for f; do
    [ -f "$f" ] && [ ! -L "$f" ] || return 1
    case $f in *"$nl"* | *\\*) return 1 ;; esac
  done
}
if [ $# -gt 1 ] && plain_files "$@" && out=$(sha -- "$@" 2>/dev/null); then
  # its lines split by the shell itself (`read` takes a pipe one byte per system call)
  set -f
  IFS=$nl
  for line in $out; do printf 'F %s\n' "${line%% *}"; done
  exit 0
fi
for f; do
  if [ -L "$f" ]; then
    printf "L "
    readlink -- "$f" | sha
  elif [ -f "$f" ]; then
    # (one whole line, or none from a file it cannot read: before, a bare `F ` joined the next
    # line and every later file got the following file's digest)
    if h=$(sha <"$f" 2>/dev/null); then printf 'F %s\n' "$h"; else echo unreadable; fi
  else
    echo missing
  fi
done
