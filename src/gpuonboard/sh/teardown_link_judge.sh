#!/bin/sh
# Judges the symlinks of a results dir that the pull copies: per link (arguments after the first
# two), NUL-terminated records `dangling LINK` (its target missing), `doomed LINK` (it resolves
# into a dir teardown removes, or anywhere outside the results when $2 is `*`) or `outside LINK`
# (elsewhere outside the results), each followed by `to TARGET`; links inside the results print
# nothing. $1: the results dir's physical path; $2: the dirs teardown removes, one a line (or *).
# Run by: steps/teardown/checks.py (names_checks_script, under find -exec sh -c).

r=$1; g=$2; shift 2
for l; do
  t=$(realpath -e -- "$l" 2>/dev/null) || { printf "dangling %s\0to %s\0" "$l" "$(readlink -- "$l")"; continue; }
  case $t in "$r"|"$r"/*) continue ;; esac
  # under a dir teardown removes (or that dir itself)? `g` holds them, one a line
  if [ "$g" = "*" ] || printf "%s\n" "$g" | { while IFS= read -r d; do [ -n "$d" ] || continue;
      case $t in "$d"|"$d"/*) exit 0 ;; esac; done; exit 1; }; then k=doomed; else k=outside; fi
  printf "%s %s\0to %s\0" "$k" "$l" "$t"
done
exit 0
