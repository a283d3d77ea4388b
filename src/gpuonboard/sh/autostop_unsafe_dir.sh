#!/bin/sh
# `unsafe DIR`: prints `PATH<TAB>WHY` for the first of DIR and the directories above it that
# another user could use to change what root's cron runs from DIR (a symbolic link, another
# user's, or writable by group/other; above DIR a sticky dir such as /tmp is fine), and returns
# 1 when there is none (as OpenSSH's StrictModes judges a key file's dirs). DIR itself may not
# exist yet (mkdir -p makes it 0700). A function only: the scripts put after it call it.
# Run by: steps/autostop (probe.UNSAFE_DIR_FN): the state probe, and the install before it writes.

unsafe() {
  u=$(id -u); x=$1; top=1
  while :; do
    if [ -L "$x" ]; then printf '%s\tis a symbolic link\n' "$x"; return 0; fi
    if [ -e "$x" ]; then
      o=$(stat -c %u -- "$x"); a=$(stat -c %a -- "$x")
      if [ "$o" != 0 ] && [ "$o" != "$u" ]; then
        printf '%s\tis owned by another user (uid %s)\n' "$x" "$o"; return 0
      fi
      if [ $((0$a & 022)) -ne 0 ] && { [ $top = 1 ] || [ $((0$a & 01000)) -eq 0 ]; }; then
        printf '%s\tis writable by other users (mode %s)\n' "$x" "$a"; return 0
      fi
    fi
    top=0
    [ "$x" = / ] && return 1
    x=$(dirname -- "$x")
  done
}
