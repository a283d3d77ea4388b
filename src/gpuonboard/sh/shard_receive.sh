#!/bin/sh
# The host side of one shard stream: waits for the "go <codec>" header, stores the shard
# (and unpacks it into the unpack dir when one is given, decrypting with age), prints its sha256.
# $1 store dir, $2 temp name, $3 unpack dir or "", $4 encrypted 1|0, $5 clean 1|0.
# Run by: shardstream.receive_command (sha, agerr and read_key put before it: _PRELUDE).
# shellcheck disable=SC2154  # $key is set by read_key (shard_read_key.sh), put before this script

t=$1; part=$2; u=$3; enc=$4; clean=$5
# the stream header: "go <codec>"; EOF instead = a stream opened ahead and not needed: nothing done
read -r go dc || exit 0
[ "$go" = go ] || { echo 'bad stream header' >&2; exit 1; }
case $dc in zstd|gzip) ;; *) echo "unknown codec: $dc" >&2; exit 1 ;; esac
mkdir -p -- "$t" && cd -- "$t" || exit 1
f=$part.fail; rm -f -- "$part" "$part.sum" "$f" "$part.fifo" "$part.key"
if [ -n "$u" ]; then
  if [ "$clean" = 1 ]; then
    for d in "${u%-*}"-*; do [ "$d" = "$u" ] || rm -rf -- "$d"; done  # this copy's only
  fi
  mkdir -p -- "$u" || exit 1
fi
if [ "$enc" = 1 ] && [ -n "$u" ]; then
  command -v age >/dev/null || { echo 'age is not installed on the host' >&2; exit 127; }
  read_key
fi
need=1; [ "$enc" = 1 ] && [ -z "$u" ] && need=0
if [ "$need" = 1 ] && ! command -v "$dc" >/dev/null; then
  echo "$dc is not installed on the host" >&2; exit 127
fi
mkfifo -m 600 "$part.fifo" || exit 1
sha < "$part.fifo" > "$part.sum" &
# tar's complaints name plaintext paths: kept in a variable, never in a file in the store on the
# data disk (nor beside the unpack dir: when that disk is full, they would be lost)
untar() {
  terr=$(tar -x -m --no-same-owner -f - -C "$u" 2>&1) \
    || echo "tar -x failed: $(printf '%s\n' "$terr" | grep -v 'Exiting with failure' | tail -n 1)" >> "$f"
  cat > /dev/null
}
keep() { tee -- "$part.fifo" "$@" || echo "writing $part failed" >> "$f"; }
if [ "$enc" = 1 ]; then
  if [ -n "$u" ]; then
    mkfifo -m 600 "$part.key" || exit 1
    { printf '%s' "$key" > "$part.key" & } 2>/dev/null
    keep "$part" \
      | { age -d -i "$part.key" 2>"$part.aerr" || agerr "$part.aerr" >> "$f"
        } \
      | { "$dc" -dc || echo "$dc -d failed" >> "$f"; } | untar
    : <> "$part.key"; rm -f -- "$part.key" "$part.aerr"
  else
    keep > "$part"
  fi
else
  { "$dc" -dc || echo "$dc -d failed" >> "$f"; } \
    | if [ -n "$u" ]; then keep "$part" | untar; else keep > "$part"; fi
fi
: <> "$part.fifo"
wait
rm -f -- "$part.fifo"
if [ -s "$f" ]; then cat -- "$f" >&2; rm -f -- "$f"; exit 3; fi
rm -f -- "$f"
cut -c1-64 < "$part.sum"
