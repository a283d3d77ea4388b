#!/bin/sh
# The one closing command of a shard upload: renames the last shard, writes the manifest,
# unpacks the shards not unpacked yet, removes those the dataset no longer has, and swaps the new
# tree in (refused when the old tree changed meanwhile). Arguments: see shardstream.finish_command.
# __LISTING_PRUNE__ is replaced by transfer.LISTING_PRUNE when loaded.
# Run by: shardstream.finish_command (sha, agerr and read_key put before it: _PRELUDE).
# shellcheck disable=SC2154  # $key is set by read_key (shard_read_key.sh), put before this script

# CARRY $1=new tree, $2=mk|mode, then ./paths of empty dirs in the old tree (cwd): a path whose
# every component in the new tree is absent or a real dir (never through a symlink or a file:
# the dataset's entry at that path wins, and nothing is made outside the tree) is printed
# NUL-terminated for one batched `mkdir -p` (mk), or gets the old dir's mode once made (mode)
# shellcheck disable=SC2016  # CARRY is a script for sh -c: expanded there, not here
CARRY='u=$1; what=$2; shift 2
for d; do
  rest=${d#./}; cur=$u; ok=1
  while [ -n "$rest" ]; do
    c=${rest%%/*}; if [ "$c" = "$rest" ]; then rest=; else rest=${rest#*/}; fi
    cur=$cur/$c
    if [ -L "$cur" ] || { [ -e "$cur" ] && [ ! -d "$cur" ]; }; then ok=0; break; fi
    if [ "$what" = mode ] && [ ! -d "$cur" ]; then ok=0; break; fi
  done
  [ "$ok" = 1 ] || continue
  if [ "$what" = mk ]; then printf "%s\\0" "$cur"; else chmod --reference="$d" -- "$cur" 2>/dev/null; fi
done'

t=$1; u=$2; p=$3; enc=$4; dc=$5; marker=$6; lp=$7; lsha=$8; lfin=$9; lease=${10:-}; tok=${11:-}
drop=${12:-}  # sha256 of the old tree's files the plan found the new one will lack (see below)
stamp=${13:-}  # the mtime (whole seconds) of the files unpacked here, as the upload listed them
# the upload's lease stays fresh while this runs (it may outlive an interrupted client)
ours() { grep -qxF "token $tok" -- "$lease" 2>/dev/null; }
beat() { [ -n "$lease" ] && ours && touch -c -- "$lease"; :; }
# the lease is still this upload's (another run takes it over when this one was not heard from
# for STALE_S): asked here, not in a round trip of its own before this command
if [ -n "$lease" ] && ! ours; then
  echo 'the upload lease was taken over' >&2; exit 9  # LEASE_TAKEN_EXIT
fi
cd -- "$t" || exit 1
if [ -n "$lp" ]; then  # the last shard streamed gets its real name here (RENAME_SCRIPT's check)
  got=; [ -f "$lp.sum" ] && got=$(cut -c1-64 < "$lp.sum")
  rm -f -- "$lp.sum"
  if [ "$got" != "$lsha" ] || [ ! -f "$lp" ]; then
    rm -f -- "$lp"; echo "sha256 mismatch on the host for $lfin" >&2; exit 3
  fi
  mv -f -T -- "$lp" "$lfin" || exit 1  # (-T: never into a directory of that name)
fi
if [ "$enc" = 1 ] && [ -n "$u" ]; then
  read_key
fi
# the shard lists (finish_lists: on stdin, not the command line, whose one argument holds
# 128 KiB: ~1,200 shards), then the manifest
lines() {
  i=0; while [ "$i" -lt "$1" ]; do IFS= read -r l && printf '%s\n' "$l" || return 1; i=$((i + 1)); done
}
lists() {
  IFS=' ' read -r nx nr nd && lines "$nx" > .finish.x && lines "$nr" > .finish.r && lines "${nd:-0}" > .finish.d
}
gone() { rm -f -- .manifest.tmp .finish.[xrd]; echo "the $1 did not arrive whole" >&2; exit 1; }
lists || gone 'shard lists'
gzip -dc > .manifest.tmp || gone manifest
fail() {
  [ -n "$u" ] && rm -rf -- "$u" "$u.old" "$u.new"
  rm -f -- .manifest.tmp .finish.[xrd]; exit "$1"
}
if [ -n "$u" ]; then  # unpack dirs of this copy's interrupted runs (.<name>.gpuonboard-unpack-*)
  for d in "${u%-*}"-*; do [ "$d" = "$u" ] || rm -rf -- "$d"; done
  mkdir -p -- "$u" || fail 1
fi
mv -f -T -- .manifest.tmp manifest.json || fail 1
while IFS=' ' read -r s want <&3; do
  [ -n "$u" ] || continue
  beat
  if [ "$want" != - ] && [ "$(sha < "$s" | cut -c1-64)" != "$want" ]; then
    rm -f -- "$s"
    echo "shard $s on the host was damaged (sha256 mismatch) and has been removed; rerun to re-send it" >&2
    fail 3
  fi
  ok=1
  if [ "$enc" = 1 ]; then
    rm -f -- .key.fifo; mkfifo -m 600 .key.fifo || fail 1
    { printf '%s' "$key" > .key.fifo & } 2>/dev/null
    rm -f -- .age.fail
    # age's own complaint only (killed by a reader that stopped, it says nothing: not damage);
    # tar's names plaintext paths: in a variable, never in the store (see RECEIVE_SCRIPT)
    terr=$(
      { age -d -i .key.fifo -- "$s" 2>.age.err || { [ -s .age.err ] && agerr .age.err > .age.fail; }; } \
      | "$dc" -dc 2>/dev/null | tar -x -m --no-same-owner -f - -C "$u" 2>&1) || ok=0
    : <> .key.fifo; rm -f -- .key.fifo .age.err
    if [ -s .age.fail ]; then  # the identity matches a recipient (checked locally): damaged
      why=$(cat .age.fail); rm -f -- .age.fail "$s"
      echo "shard $s on the host was damaged ($why) and has been removed; rerun to re-send it" >&2; fail 3
    fi
    if [ "$ok" != 1 ]; then  # tar's line (a full disk says so), not its closing "Exiting with ..."
      printf '%s\n' "$terr" | grep -v 'Exiting with failure' | tail -n 1 >&2; rm -f -- .age.fail
      echo "unpacking $s failed" >&2; fail 2
    fi
    rm -f -- .age.fail
  else
    tar -x -m --no-same-owner -f "$s" -C "$u" || fail 2
  fi
done 3< .finish.x
while IFS= read -r s; do rm -rf -- "$s"; done < .finish.r
rm -f -- .finish.x .finish.r
rm -f -- unpacked-*
if [ -n "$u" ]; then
  chmod 755 "$u"
  # the files tar unpacked (tar -m: the unpack's time) get the mtime the upload listed them with
  # on the host (teardown keeps a tree holding a file of another size or mtime); not those a
  # seed hard-linked from the old tree (they keep the mtime an earlier upload listed). Best
  # effort: a file left out keeps the tree on the host at teardown, nothing is lost
  case $stamp in ''|*[!0-9]*) ;; *)
    find "$u" -type f -links 1 -exec touch -c -m -d "@$stamp" -- {} + 2>/dev/null ;;
  esac
  parent=$(dirname -- "$p")
  old=
  if [ -d "$p" ] && [ ! -L "$p" ]; then  # empty dirs a job made in the old tree: kept (see CARRY)
    ( cd -- "$p" && find . -mindepth 1 -type d -empty -exec sh -c "$CARRY" sh "$u" mk {} + ) \
      | xargs -0 -r mkdir -p -- 2>/dev/null
    ( cd -- "$p" && find . -mindepth 1 -type d -empty ! -perm 0755 -exec sh -c "$CARRY" sh "$u" mode {} + )
    [ -f "$p/.gpuonboard-copy" ] && cp -p -- "$p/.gpuonboard-copy" "$u/" 2>/dev/null  # --decrypt-to's mark
    # the old tree's files the new one lacks must be exactly those the plan saw ($drop: sha256 of
    # their sorted NUL-terminated paths); any other set means a job changed the tree meanwhile
    lst() { ( d=$1; shift; cd -- "$d" && find . -mindepth 1 __LISTING_PRUNE__ -o "$@" -printf '%P\0' ) | LC_ALL=C sort -z -T "${u%/*}"; }  # (spills there, not /tmp)
    # (both lists hold plaintext paths: beside the unpack dir, on --decrypt-to's disk and swept
    # with it by the next run, never in the store on the data disk)
    lst "$p" ! -type d > "$u.old"; lst "$u" > "$u.new"
    got=$(LC_ALL=C comm -z -23 "$u.old" "$u.new" | sha | cut -c1-64); rm -f -- "$u.old" "$u.new"
    if [ "$got" != "$drop" ]; then
      printf '%s\n' "the tree $p changed during the upload (files not in the dataset appeared in it, or\
 ones it no longer has vanished: a job at work?); it was not replaced and nothing was lost: see what\
 is there, then rerun (the shards are on the host: nothing is sent again)" >&2
      fail 5
    fi
  fi
  if [ -e "$p" ] || [ -L "$p" ]; then
    # shellcheck disable=SC2015  # either failing is a failure: fail 1 is meant for both
    old=$(mktemp -d "$parent/.gpuonboard-old.XXXXXXXX") && mv -- "$p" "$old/x" || fail 1
  fi
  mv -- "$u" "$p" || fail 1
  cp -f -- manifest.json manifest.unpacked.json 2>/dev/null  # what the tree holds now
  [ -n "$old" ] && rm -rf -- "$old"
  : > "$marker"
fi
# the shards, once the tree they were unpacked into is in place and was proven file by file as
# it landed (the client sends this list only then), and what interrupted attempts left
if [ -s .finish.d ]; then
  while IFS= read -r s; do [ -n "$s" ] && rm -f -- "$s"; done < .finish.d
  rm -f -- .incoming-* .key.fifo .age.err .age.fail
fi
rm -f -- .finish.d
exit 0
