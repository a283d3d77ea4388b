#!/bin/sh
# `stop TAG RUN`: SIGTERM the process groups holding this login's processes marked `TAG-<other
# run>` (one per remote command: an rsync, a shard stream), wait for them, SIGKILL what is left;
# prints "stopped <groups>". `tidy DIR`: stdin holds NUL-terminated records, `A<temp>` (an rsync
# temp file of a file to send: kept as that file's partial, resumed from, unless a bigger partial
# is there) or `R<path>` (a temp or partial of a file not to send: removed), relative to DIR;
# prints "tidied A|R" per file it moved or removed.
# A template: uploadlock.STOP_FN replaces __ENV__ (UPLOAD_ENV), __WAIT__ (STOP_WAIT_S),
# __GRACE__ (STOP_GRACE_S) and __PARTIAL__ (rsync's partial dir) when loaded.
# Run by: uploadlock.take_command (STOP_FN, put before upload_take.sh).

stop() {
  pg() { sed 's/.*) //' "$1/stat" 2>/dev/null | cut -d' ' -f3; }
  mine=$(pg /proc/$$); gs=; n=0
  # shellcheck disable=SC2013  # /proc/<pid>/environ paths: no spaces or glob characters
  for e in $(grep -lszx "__ENV__=$1-[0-9a-f]*" /proc/[0-9]*/environ 2>/dev/null); do
    p=${e%/environ}
    [ -O "$p" ] || continue
    grep -qszx "__ENV__=$1-$2" "$e" && continue
    g=$(pg "$p"); case $g in ''|*[!0-9]*|0|1) continue ;; esac
    [ "$g" = "$mine" ] && continue
    case " $gs " in *" $g "*) ;; *) gs="$gs $g" ;; esac
  done
  # a run that just ended may still be ending on the host (its rsync reads the EOF of a channel
  # sshd closes a moment later, later on a loaded host): a grace of __GRACE__ s before it is
  # counted as left running and stopped
  i=0; alive=$gs
  while [ -n "$alive" ] && [ $i -lt $((__GRACE__ * 10)) ]; do
    sleep 0.1 2>/dev/null || sleep 1; i=$((i + 1)); left=$alive; alive=
    for g in $left; do kill -0 "-$g" 2>/dev/null && alive="$alive $g"; done
  done
  gs=$alive
  for g in $gs; do kill -TERM "-$g" 2>/dev/null; n=$((n + 1)); done  # (dash's kill takes no `--`)
  i=0; alive=$gs
  while [ -n "$alive" ] && [ $i -lt $((__WAIT__ * 10)) ]; do
    sleep 0.1 2>/dev/null || sleep 1; i=$((i + 1)); alive=
    for g in $gs; do kill -0 "-$g" 2>/dev/null && alive="$alive $g"; done
  done
  for g in $alive; do kill -KILL "-$g" 2>/dev/null; done
  echo "stopped $n"
}
tidy() {
  ( cd -- "$1" 2>/dev/null || exit 0
    # shellcheck disable=SC2016  # a script for sh -c: expanded there, not here
    xargs -0 -r sh -c '
      for x; do
        op=${x%"${x#?}"}; f=${x#?}
        { [ -f "$f" ] && [ ! -L "$f" ]; } || continue
        case $f in */*) d=${f%/*} ;; *) d=. ;; esac
        b=${f##*/}; n=${b#.}; n=${n%.??????}; p=$d/__PARTIAL__/$n
        kept=; [ -f "$p" ] && [ "$(stat -c %s -- "$p")" -ge "$(stat -c %s -- "$f")" ] && kept=1
        if [ "$op" = A ] && [ -z "$kept" ]; then
          mkdir -p -- "$d/__PARTIAL__" && mv -f -- "$f" "$p" && echo "tidied A"
        else
          rm -f -- "$f" && echo "tidied R"
        fi
      done' sh )
}
