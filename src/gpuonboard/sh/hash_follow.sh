#!/bin/sh
# Hashes big files on the host WHILE rsync writes them, so that the upload's sha256 check needs
# no second read of them after the last byte (1 GiB: 1.4 s with SHA-NI, 8 s with sha256sum).
# Run by: transfer/follow (follow_command), beside the rsync run, over the upload's master
# connection. `sha` (stdin -> "HASH ...") is defined before this text.
# Arguments: quadruples DIR NAME FINAL SIZE, one per file: rsync writes DIR/NAME as its temp
# file DIR/.NAME.XXXXXX, or in place: DIR/NAME itself where that is not FINAL (a partial file
# appended to), or a resumed file's partial DIR/__PARTIAL__/NAME (rsync 3.5.0 writes into
# it); the file lands at FINAL by a rename; SIZE is the size it will have
# (-1: not known). Prints, per file (INDEX: the quadruple's, from 0): "INDEX -" when it begins
# to read it, "INDEX +" after each read, "INDEX x" when it gives that inode up (gone from its
# paths, or shrunk), and "INDEX SHA256" once the inode it read is at FINAL, whole: the hash of
# every byte read from it, read as it grew. It never writes, and ends when every file landed, or
# when its stdin closes (the caller is done: see follow.Follower.close).

# stdin's end stops this script (a watcher TERMs it; follow() and the loop below end at their
# next look once it is gone), and its own end stops the watcher. fd 5: the progress lines' way out.
exec 3<&0
(while read -r _; do :; done; kill -TERM "$$") <&3 >/dev/null 2>&1 &
watcher=$!
exec 3<&- </dev/null 5>&1
trap 'kill "$watcher" 2>/dev/null' EXIT
alive() { kill -0 "$$" 2>/dev/null; } # (in a subshell: whether this script still runs)
CAP=67108864                          # bytes per read: the "+" lines keep coming on a slow host

left=
i=0
while [ "$#" -ge 4 ]; do
  eval "e_d_$i=\$1 e_n_$i=\$2 e_f_$i=\$3 e_s_$i=\$4"
  left="$left $i "
  i=$((i + 1))
  shift 4
done

nap() { sleep 0.25 2>/dev/null || sleep 1; }
# once all of a file's SIZE is read, rsync renames it within milliseconds: the next looks come
# sooner (QUICK of them, 20 ms apart; then naps again, as for a file that is not renamed)
QUICK=25
soon() { sleep 0.02 2>/dev/null || nap; }
at() { [ "$(stat -c %d:%i -- "$1" 2>/dev/null)" = "$ino" ]; } # (a symlink there is not it)

# rsync's temp name suffix ($1: the file, $2: its suffix): 6 letters and digits, of at least two
# kinds (as transfer.rsync_temp_of) or, as about 1 % of rsync's are, of one kind (`.log.202401`
# may be a user's own file) in a file written since this script began
T0=$(date +%s 2>/dev/null)
temp_suffix() {
  case $2 in *[!a-zA-Z0-9]*) return 1 ;; esac
  k=0
  case $2 in *[a-z]*) k=$((k + 1)) ;; esac
  case $2 in *[A-Z]*) k=$((k + 1)) ;; esac
  case $2 in *[0-9]*) k=$((k + 1)) ;; esac
  [ "$k" -ge 2 ] || [ "$(stat -c %Y -- "$1" 2>/dev/null)" -ge "$T0" ] 2>/dev/null
}

# the file rsync writes for entry $1 now (-> $w): its temp file, DIR/NAME (not FINAL), or its
# partial in the partial dir; the entry's paths and SIZE -> $d $nm $f $size
found() {
  d='' nm='' f='' size=''
  eval "d=\$e_d_$1 nm=\$e_n_$1 f=\$e_f_$1 size=\$e_s_$1"
  for w in "$d/.$nm".??????; do
    [ -f "$w" ] && [ ! -L "$w" ] && temp_suffix "$w" "${w##*.}" && return 0
  done
  for w in "$d/$nm" "$d/__PARTIAL__/$nm"; do
    [ "$w" != "$f" ] && [ -f "$w" ] && [ ! -L "$w" ] && return 0
  done
  return 1
}

# every byte of $w (fd 7) to stdout as it grows ("$i +" to fd 4 after each read), until that
# inode is at $f and no longer grows (status 0); status 1 when it is at none of its paths any
# more (removed, moved aside: another file is written), shrank, or cannot be read. One look a
# nap: a process or two each (a look every 50 ms took 18 % of a core at 100 Mbit/s).
follow() {
  exec 7<"$w" || return 1
  ino=$(stat -L -c %d:%i /dev/fd/7 2>/dev/null)
  [ -n "$ino" ] || return 1
  got=0 quick=$QUICK
  while alive; do
    # shellcheck disable=SC2046  # split into its two numbers on purpose
    set -- $(stat -L -c '%s %h' /dev/fd/7)
    [ "$#" = 2 ] && [ "$1" -ge "$got" ] || return 1
    if [ "$1" -gt "$got" ]; then
      n=$(($1 - got))
      [ "$n" -le "$CAP" ] || n=$CAP
      head -c "$n" <&7 || return 1
      got=$((got + n))
      echo "$i +" >&4
      [ "$n" = "$CAP" ] && continue # (more is there already)
    elif at "$f"; then
      [ "$(stat -L -c %s /dev/fd/7)" = "$got" ] && return 0
      continue # (it grew before it landed: read the rest)
    elif [ "$2" = 0 ] || { ! at "$w" && ! at "$d/$nm"; }; then
      return 1
    fi
    if [ "$got" = "$size" ] && [ "$quick" -gt 0 ]; then
      quick=$((quick - 1))
      soon
    else
      nap
    fi
  done
  return 1
}

while alive; do
  for i in $left; do
    found "$i" || continue
    echo "$i -"
    out=$({ { follow 3>&- 4>&5; echo "rc $?" >&3; } | sha; } 3>&1)
    case $out in
      *"rc 0"*) ;;
      *)
        echo "$i x"
        continue
        ;;
    esac
    left=${left%%" $i "*}${left#*" $i "}
    sum=x # (no hash printed: given up)
    for h in $out; do
      case $h in
        [0-9a-f]*) [ "${#h}" -eq 64 ] && sum=$h ;;
      esac
    done
    printf '%s %s\n' "$i" "$sum"
  done
  # (the last file landed: end now, not a nap later, as the caller waits for this end)
  case $left in *[0-9]*) nap ;; *) break ;; esac
done
