#!/bin/sh
# Hashes big files on the host WHILE rsync writes them, so that the upload's sha256 check needs
# no second read of them after the last byte (1 GiB: 1.4 s with SHA-NI, 8 s with sha256sum).
# Run by: transfer/follow (follow_command), beside the rsync run, over the upload's master
# connection, stopped with its SSH session (shell.until_session_ends). `sha` (stdin -> "HASH ...")
# is defined before this text.
# Arguments: PARTIAL (rsync's --partial-dir name), then triples DIR NAME FINAL, one per file:
# rsync writes DIR/NAME as its temp file DIR/.NAME.XXXXXX, or in place (the partial file
# DIR/PARTIAL/NAME, or DIR/NAME itself where that is not FINAL), and the file lands at FINAL by
# a rename. For each file it prints "INDEX -" (INDEX: the triple's, from 0) when it begins to
# read it, and "INDEX SHA256" once the inode it read lands at FINAL, whole: the hash of every
# byte read from it, read as it grew. A file
# it could not follow (written and renamed between two looks, or removed) prints nothing: the
# caller hashes it afterwards as before. It never writes, and stops when every file landed.

pdir=$1
shift
left=
i=0
while [ "$#" -ge 3 ]; do
  eval "e_d_$i=\$1 e_n_$i=\$2 e_f_$i=\$3"
  left="$left $i "
  i=$((i + 1))
  shift 3
done

nap() { sleep 0.05 2>/dev/null || sleep 1; }
inode() { stat -L -c %d:%i -- "$1" 2>/dev/null; }

# the file rsync writes for entry $1 now (-> $w): its temp file, its partial file, or DIR/NAME
found() {
  d='' nm='' f=''
  eval "d=\$e_d_$1 nm=\$e_n_$1 f=\$e_f_$1"
  for w in "$d/.$nm".??????; do
    [ -f "$w" ] && [ ! -L "$w" ] && return 0
  done
  w=$d/$pdir/$nm
  [ -f "$w" ] && [ ! -L "$w" ] && return 0
  w=$d/$nm
  [ "$w" != "$f" ] && [ -f "$w" ] && [ ! -L "$w" ]
}

# every byte of $w (fd 7) to stdout as it grows, until that inode is at $f and no longer grows
# (status 0); status 1 when it was removed (another file is written) or cannot be read
follow() {
  exec 7<"$w" || return 1
  ino=$(inode /dev/fd/7)
  [ -n "$ino" ] || return 1
  got=0
  while :; do
    have=$(stat -L -c %s /dev/fd/7) || return 1
    if [ "$have" -gt "$got" ]; then
      head -c "$((have - got))" <&7 || return 1
      got=$have
    elif [ "$(inode "$f")" = "$ino" ]; then
      [ "$(stat -L -c %s /dev/fd/7)" = "$got" ] && return 0
    elif [ "$(stat -L -c %h /dev/fd/7)" = 0 ]; then
      return 1
    else
      nap
    fi
  done
}

while :; do
  case $left in *[0-9]*) ;; *) break ;; esac
  for i in $left; do
    found "$i" || continue
    echo "$i -"
    out=$({ { follow 3>&-; echo "rc $?" >&3; } | sha; } 3>&1)
    case $out in
      *"rc 0"*) ;;
      *) continue ;;
    esac
    left=${left%%" $i "*}${left#*" $i "}
    for h in $out; do
      case $h in
        [0-9a-f]*) [ "${#h}" -eq 64 ] && printf '%s %s\n' "$i" "$h" ;;
      esac
    done
  done
  nap
done
