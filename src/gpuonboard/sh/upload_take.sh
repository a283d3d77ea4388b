#!/bin/sh
# Makes the copy's dir and takes its upload lease (arguments: see uploadlock.TAKE_SCRIPT);
# prints "took <lease file>", "busy <age s>" and the lease's lines, or "other <copy>".
# Run by: uploadlock.take_command (LEASE_FNS, RECORD_FN and STOP_FN put before it).

tgt=$1; pt=${9:-}; pn=${10:-}; ptag=${11:-}; prun=${12:-}
# a dir this upload makes (or finds empty) is its own; one the user's files were in already is
# not recorded for teardown, which would remove them with it (`sync --dest ~ --dataset proj` into
# the user's own ~/proj: the copy merges into it)
fresh() {
  { ! [ -e "$1" ] && ! [ -L "$1" ]; } || { [ -d "$1" ] && ! [ -L "$1" ] && [ -z "$(ls -A -- "$1")" ]; }
}
tn=; fresh "$1" 2>/dev/null && tn=1; ptn=; [ -n "$pt" ] && fresh "$pt" 2>/dev/null && ptn=1
mkdir -p -- "$1" || exit 2
# one spelling of the data dir (a symlink or .. in it names the same lease)
d=$(cd -- "$(dirname -- "$2")" && pwd -P) && f=$d/$(basename -- "$2") || exit 2
if [ ! -e "$f" ]; then  # a data dir this login may not write (or a read-only mount): in the copy
  if ( : > "$f.$3" ) 2>/dev/null; then rm -f -- "$f.$3"; else f=$(cd -- "$1" && pwd -P)/.gpuonboard-upload; fi
fi
[ -d "$f" ] && { echo "$f is a directory, not an upload lease; remove it" >&2; exit 3; }
write() { printf 'token %s\nowner %s\npid %s\nholder %s\n' "$3" "$4" "$7" "$5"; }
took() {  # the plaintext tree this run writes ($pt): marked as another copy's? then give it back
  have=; [ -n "$pt" ] && [ -f "$pt/.gpuonboard-copy" ] && have=$(head -n 1 -- "$pt/.gpuonboard-copy")
  if [ -n "$have" ] && [ "$have" != "$d/$pn" ]; then
    grep -qxF "token $tok" -- "$f" 2>/dev/null && rm -f -- "$f"; echo "other $have"; exit 0
  fi
  if [ -n "$pn" ] && [ -n "$ptag" ]; then  # this copy's unpack dirs killed runs left (none is live)
    for dir in "$(dirname -- "$tgt")" ${pt:+"$(dirname -- "$pt")"}; do
      for x in "$dir/.$pn.gpuonboard-unpack-$ptag-"*; do [ -e "$x" ] && rm -rf -- "$x"; done
    done
  fi
  # where this upload writes, for teardown (see UPLOADS_RECORD): the dir it made ($tgt: the copy,
  # or its store alone, <name>.shards or <name>.encrypted, never a <name> it does not write) and
  # its plaintext tree, whose dir is resolved even when not made yet (--decrypt-to /scratch/new
  # with /scratch a link: teardown looks in /scratch's target)
  pp=$pt; [ -n "$pt" ] && up=$(realpath -m -- "$(dirname -- "$pt")" 2>/dev/null) && pp=${up%/}/${pt##*/}
  [ -n "$have" ] && ptn=1  # (marked as this copy's: made by an upload of it)
  set --; [ -n "$pn" ] && [ -n "$tn" ] && set -- "$d/${tgt##*/}"
  [ -n "$ptn" ] && set -- "$@" "$pp"
  record "$@"
  # the plaintext tree, when the record holds it (made by this or an earlier upload): the caller
  # adds what this run writes there to its list (uploadlock.WRITTEN_DIR), never to a dir of the
  # user's that this upload merged into (never recorded)
  [ -n "$pt" ] && [ -n "${u:-}" ] && grep -qzxF -- "$pp" "$u" 2>/dev/null && printf 'tree %s\n' "$pp"
  # what earlier runs of this copy still run here (a dropped link's receiver), then their temp
  # files (stdin): stopped, so that what they received is kept and this run resumes from it
  if [ -n "$ptag" ] && [ -n "$prun" ]; then stop "$ptag" "$prun"; tidy "$tgt"; fi
  echo "took $f"; exit 0
}
tok=$3
if [ ! -e "$f" ] && (set -C; write "$@" > "$f") 2>/dev/null; then took; fi
# a live lease is ours to take over only when its owner is this project and its pid ($8) ended
if { ! grep -qxF "owner $4" -- "$f" || ! grep -qxF "pid $8" -- "$f"; } 2>/dev/null \
   && live "$f" "$(fsnow "$f.$3.now")" "$6"; then exit 0; fi
write "$@" > "$f.$3" && mv -f -- "$f.$3" "$f" && took
rm -f -- "$f.$3"; exit 3
