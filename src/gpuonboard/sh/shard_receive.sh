#!/bin/sh
# The host side of one shard stream: waits for the header "go <codec> [<part> new|ask [tree]]", stores
# the shard (and unpacks it into the unpack dir when one is given, decrypting with age), prints
# its sha256 (with "tree" and an unpack, first "tree <sha256>": each unpacked file hashed as tar
# finishes it, see tree_sums). With "ask" it first resumes: prints "have <bytes> <sha256>" of the partial <part> an
# interrupted stream left, reads "from <offset>" (the client's prefix matched: <offset> = those
# bytes, kept, and only the rest arrives; else 0: the partial is dropped), and the shard's file,
# its sha256 and the unpack all cover the WHOLE shard: the partial's bytes, then the new ones.
# $1 store dir, $2 temp name (when the header names none), $3 unpack dir or "", $4 encrypted
# 1|0, $5 clean 1|0.
# Run by: shardstream.receive_command (sha, agerr and read_key put before it: _PRELUDE; $HB, the
# text of hash_batch.sh).
# shellcheck disable=SC2154  # $key is set by read_key (shard_read_key.sh), put before this script

t=$1; part=$2; u=$3; enc=$4; clean=$5
# the stream header; EOF instead = a stream opened ahead and not needed: nothing done
read -r go dc p mode vt || exit 0
[ "$go" = go ] || { echo 'bad stream header' >&2; exit 1; }
case $dc in zstd|gzip) ;; *) echo "unknown codec: $dc" >&2; exit 1 ;; esac
case $p in '') ;; .incoming-*/*|*/*) echo 'bad stream header' >&2; exit 1 ;; .incoming-?*) part=$p ;;
  *) echo 'bad stream header' >&2; exit 1 ;; esac
mkdir -p -- "$t" && cd -- "$t" || exit 1
f=$part.fail; rm -f -- "$part.sum" "$f" "$part.fifo" "$part.key"
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
off=0
if [ "$mode" = ask ]; then
  k=0; s=-
  if [ -f "$part" ] && [ ! -L "$part" ]; then
    k=$(($(wc -c < "$part"))); s=$(head -c "$k" -- "$part" | sha | cut -c1-64)
  fi
  echo "have $k $s"
  read -r fr off || exit 0  # (the client went away)
  case $fr:$off in from:0|from:[1-9]*) ;; *) echo 'bad resume line' >&2; exit 1 ;; esac
  case $off in *[!0-9]*) echo 'bad resume line' >&2; exit 1 ;; esac
  [ "$off" -le "$k" ] || { echo 'bad resume line' >&2; exit 1; }
  [ "$off" -gt 0 ] && { truncate -s "$off" -- "$part" || exit 1; }
fi
[ "$off" -gt 0 ] || rm -f -- "$part"
mkfifo -m 600 "$part.fifo" || exit 1
sha < "$part.fifo" > "$part.sum" &
# tar's complaints name plaintext paths: kept in a variable, never in a file in the store on the
# data disk (nor beside the unpack dir: when that disk is full, they would be lost)
untar() {
  if [ "$vt" = tree ] && tar --version 2>/dev/null | grep -q GNU; then
    rm -f -- "$part.tst" "$part.tree"
    terr=$( { { tar -x -v --quoting-style=literal -m --no-same-owner -f - -C "$u" 2>&3 3>&-
                echo "$?" > "$part.tst"; } | tree_sums 3>&- > "$part.tree"; } 3>&1)
    st=$(cat -- "$part.tst" 2>/dev/null); rm -f -- "$part.tst"
  else
    rm -f -- "$part.tree"
    terr=$(tar -x -m --no-same-owner -f - -C "$u" 2>&1); st=$?
  fi
  [ "$st" = 0 ] \
    || echo "tar -x failed: $(printf '%s\n' "$terr" | grep -v 'Exiting with failure' | tail -n 1)" >> "$f"
  cat > /dev/null
}
# stdin: the names tar -v prints, each as it BEGINS that member; sed holds each one back until
# the next begins (or tar ends), so a file is hashed only once tar has closed it. Directories
# (names ending in /) are left out; the others are hashed as hash_batch.sh does (a batch of
# files by one process); its lines ("F|L <sha256>", "missing": their first two words), in tar's
# order, are hashed into one sha256, which the client computes from the dataset's (tree_digest)
tree_sums() {
  # shellcheck disable=SC2016  # sed's own $ (the last line), not the shell's
  # (grep in the C locale: in a UTF-8 one GNU grep drops a name with a byte that is no UTF-8)
  sed -n 'x;1!p;${x;p;}' | LC_ALL=C grep -v '/$' | tr '\n' '\0' \
    | ( cd -- "$u" && xargs -0 -r sh -c "$HB" sh ) | cut -d ' ' -f 1,2 | sha | cut -c1-64
}
# what arrives, as the host stores it: the tar (decompressed) or the ciphertext (as it is)
arrive() {
  if [ "$enc" = 1 ]; then cat; else "$dc" -dc || echo "$dc -d failed" >> "$f"; fi
}
# the stored shard's WHOLE bytes (a resumed partial's first), appended to $part, into each file
# named (the fifo of its sha256) and on stdout: one tee, where nothing was kept (each tee is one
# more copy of every byte through a pipe)
whole() {
  if [ "$off" -gt 0 ]; then
    { cat -- "$part" || echo "reading $part failed" >> "$f"
      arrive | { tee -a -- "$part" || echo "writing $part failed" >> "$f"; }
    } | tee -- "$@"
  else
    arrive | { tee -- "$part" "$@" || echo "writing $part failed" >> "$f"; }
  fi
}
if [ -z "$u" ]; then
  whole > "$part.fifo"
elif [ "$enc" = 1 ]; then
  mkfifo -m 600 "$part.key" || exit 1
  { printf '%s' "$key" > "$part.key" & } 2>/dev/null
  whole "$part.fifo" \
    | { age -d -i "$part.key" 2>"$part.aerr" || agerr "$part.aerr" >> "$f"
      } \
    | { "$dc" -dc || echo "$dc -d failed" >> "$f"; } | untar
  : <> "$part.key"; rm -f -- "$part.key" "$part.aerr"
else
  whole "$part.fifo" | untar
fi
: <> "$part.fifo"
wait
rm -f -- "$part.fifo"
if [ -s "$f" ]; then cat -- "$f" >&2; rm -f -- "$f" "$part.tree"; exit 3; fi
rm -f -- "$f"
if [ -s "$part.tree" ]; then echo "tree $(cat -- "$part.tree")"; fi
rm -f -- "$part.tree"
cut -c1-64 < "$part.sum"
