#!/bin/sh
# The disk test of `prove`: sequential write (+fsync) then read of one file in $D, fio when
# present (and $FIO is true) else dd; prints TOOL, FS, SIZE, DIRECT, WRITE/READ (dd) or fio's
# JSON between ##FIO-WRITE/##FIO-READ markers, and CACHED_AFTER_WRITE/CACHED_BEFORE_READ.
# Removes its file on every exit it can trap, and first the files earlier runs left (SWEPT).
# Values in variables set before it (prove.disk_script, quoted by shell.quote): D the directory,
# N the size in 4 MiB blocks, T the token in the file name, FIO true|false, BASE the file's
# name prefix (prove.DISK_FILE).
# Run by: steps/prove/disk.py (disk_script).
# shellcheck disable=SC2154  # D, N, T, FIO, BASE: set by prove.disk_script before this script

trap '' PIPE
# dd's and df's words in the C locale, as `full` and `last` read them: a host whose sshd session
# gets LANG=zh_CN.UTF-8 (pam_env, /etc/default/locale) had dd say `设备上没有空间`, so a full disk
# was written a second time and its error was `0 字节已复制，...`
export LC_ALL=C
err() { echo "ERR $2"; exit "$1"; }
last() {
  printf '%s\n' "$1" | grep -v -e ' records in$' -e ' records out$' -e ' copied, ' | grep . | tail -n 1
}
[ -d "$D" ] || err 2 "no such directory: $D"
H=$(uname -n 2>/dev/null | tr -c 'A-Za-z0-9_\n-' _); P="$D/$BASE.${H:-host}."
if [ -d "/proc/$$" ]; then
  for old in "$P"*; do
    [ -f "$old" ] || continue
    pid=${old#"$P"}; pid=${pid%%.*}
    case $pid in ''|*[!0-9]*) continue ;; esac
    [ -d "/proc/$pid" ] && continue
    size=$(wc -c < "$old" 2>/dev/null)
    rm -f -- "$old" && echo "SWEPT ${size:-0}"
  done
fi
avail=$(df -Pk "$D" | awk 'NR==2 {print $4}')
need=$((N * 4096 * 2))
case $avail in ''|*[!0-9]*)
  err 3 "cannot read the free space in $D: df -Pk printed '$avail', not a number of KiB" ;;
esac
[ "$avail" -ge "$need" ] || err 3 "only ${avail} KiB free in $D, need $need KiB"
fs=$(stat -f -c %T "$D" 2>/dev/null | tr ' ' _)
where=$(df -P "$D" | awk 'NR==2 { m = $6; for (i = 7; i <= NF; i++) m = m " " $i; print $1, m }')
echo "FS ${fs:-unknown} $where"
echo "SIZE $((N * 4194304))"
F=
trap '[ -z "$F" ] || rm -f -- "$F"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
F=$(mktemp "$P$$.$T.XXXXXX") || err 4 "cannot create a file in $D"
cached() { command -v fincore >/dev/null 2>&1 && fincore -b -n -o RES "$F" 2>/dev/null | tr -d ' '; }
drop() {
  c=$(cached); [ -z "$c" ] || echo "CACHED_AFTER_WRITE $c"
  if dd if="$F" iflag=nocache count=0 2>/dev/null; then echo "DROPPED 1"; else echo "DROPPED 0"; fi
  c=$(cached); [ -z "$c" ] || echo "CACHED_BEFORE_READ $c"
}
full() { case $1 in *"No space left"*|*"quota exceeded"*|*"Quota exceeded"*) return 0 ;; esac; return 1; }
if "$FIO" && command -v fio >/dev/null 2>&1; then
  echo "TOOL fio"
  FF=$(printf '%s\n' "$F" | sed 's/:/\\:/g')
  if fio --name=probe --filename="$FF" --rw=write --bs=4M --size=4M --direct=1 --output=/dev/null \
      >/dev/null 2>&1; then dir=1; else dir=0; fi
  echo "DIRECT $dir"
  job() { n=$1; shift; fio --name="$n" --filename="$FF" --bs=4M --size=$((N * 4))M --ioengine=psync \
    --output-format=json --rw="$n" --direct=$dir "$@" 2>&1; }
  fioerr() { last "$(printf '%s\n' "$1" | grep '^fio')"; }
  out=$(job write --end_fsync=1) || err 5 "write failed: $(fioerr "$out")"
  printf '##FIO-WRITE\n%s\n' "$out"
  drop
  out=$(job read) || err 6 "read failed: $(fioerr "$out")"
  printf '##FIO-READ\n%s\n##FIO-END\n' "$out"
else
  echo "TOOL dd"
  now() { date +%s%N; }
  case $(now) in ''|*[!0-9]*)
    err 7 "this host's date cannot print nanoseconds (date +%s%N): install GNU coreutils or fio" ;;
  esac
  t0=$(now)
  if out=$(dd if=/dev/zero of="$F" bs=4M count="$N" oflag=direct conv=fsync 2>&1); then dir=1
  else
    if full "$out"; then err 5 "write failed: $(last "$out")"; fi
    t0=$(now)
    out=$(dd if=/dev/zero of="$F" bs=4M count="$N" conv=fsync 2>&1) || err 5 "write failed: $(last "$out")"
    dir=0
  fi
  t1=$(now)
  echo "DIRECT $dir"
  echo "WRITE $((N * 4194304)) $((t1 - t0))"
  drop
  if [ $dir = 1 ]; then flag=iflag=direct; else flag=; fi
  t0=$(now); out=$(dd if="$F" of=/dev/null bs=4M $flag 2>&1) || err 6 "read failed: $(last "$out")"; t1=$(now)
  echo "READ $((N * 4194304)) $((t1 - t0))"
fi
