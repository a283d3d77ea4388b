#!/bin/sh
# read_key: the identity lines shardstream.identity_prefix() put first on stdin (a count,
# then the lines) into $key, a shell variable: never a file or an argument.
# Run by: shardstream.py, put (after sha and agerr) before shard_receive.sh and shard_finish.sh.

read_key() {
  IFS= read -r nk || { echo 'no identity on stdin' >&2; exit 1; }
  key=; while [ "$nk" -gt 0 ]; do IFS= read -r l || exit 1; key="$key$l
"; nk=$((nk - 1)); done
}
