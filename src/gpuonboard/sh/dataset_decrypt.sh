#!/bin/sh
# Decrypts a dataset's encrypted files into the plaintext dir (--decrypt-to), the identity on
# stdin; $1 the plaintext dir, then (ciphertext, plaintext path, mtime, mode) per file.
# Exit 4: the way to a file is blocked (one line says which), 5: age was killed.
# Run by: steps/dataset/decrypt.py (DECRYPT_SCRIPT: agerr put before it).

command -v age >/dev/null || { echo 'age is not installed on the host' >&2; exit 127; }
key=$(cat); rc=0; base=$1; shift
mkdir -p -- "$base" || exit 4
place() {
  rest=${1#"$base"/}; cur=$base
  while :; do
    case $rest in */*) one=${rest%%/*}; rest=${rest#*/} ;; *) break ;; esac
    cur=$cur/$one
    if [ -L "$cur" ] || { [ -e "$cur" ] && [ ! -d "$cur" ]; }; then rm -f -- "$cur" || return 1; fi
    [ -d "$cur" ] || mkdir -- "$cur" || return 1
  done
  if [ -L "$1" ]; then rm -f -- "$1" || return 1; fi
  if [ -d "$1" ] && ! rmdir -- "$1" 2>/dev/null; then  # (an empty one goes, as rsync's would)
    printf '%s is a directory on the host where the dataset now has a file; %s\n' \
      "${1#"$base"/}" 'move it away, then rerun' >&2
    return 1
  fi
}
while [ $# -ge 4 ]; do
  c=$1; p=$2; m=$3; o=$4; shift 4
  place "$p" || { rc=4; continue; }
  t=$(mktemp "$(dirname -- "$p")/.gpuonboard-dec.XXXXXXXX") || { rc=4; continue; }
  # (age's complaint kept in a variable: a file beside $t is lost when that disk is full)
  if err=$(printf '%s\n' "$key" | age -d -i - -o "$t" -- "$c" 2>&1); then
    chmod "$o" "$t"; touch -m -d "@$m" "$t"; mv -f -- "$t" "$p"
  else st=$?
    rm -f -- "$t"
    if [ "$st" -gt 128 ]; then  # age killed (the OOM killer): no fault of the key or the file
      echo "age was killed by signal $((st - 128))" >&2; exit 5
    fi
    printf '%s: %s\n' "$c" "$(printf '%s\n' "$err" | agerr -)" >&2; [ "$rc" = 4 ] || rc=1; fi
done
exit $rc
