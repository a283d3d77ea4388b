#!/bin/sh
# The probe of teardown_pull: NUL-terminated records `home PATH`, `rsync` or `no-rsync`, then for
# the results dir $d `missing`, `notdir WHAT`, or `real PATH` (where it resolves), `files N
# BYTES` and what `checks` prints (the names and symlinks the pull cannot stand for).
# Values set before it: d the results dir (quoted by shell.quote); `checks`, a function run in
# the results dir with $root its physical path (checks.names_checks_script).
# Run by: steps/teardown/checks.py (pull_probe_command).
# shellcheck disable=SC2154  # d: set by pull_probe_command before this script

printf 'home %s\0' "$HOME"
if command -v rsync >/dev/null 2>&1; then printf 'rsync\0'; else printf 'no-rsync\0'; fi
if [ -d "$d" ]; then
  if ! cd -- "$d" 2>/dev/null; then printf 'notdir a directory this login cannot enter\0'; exit 0; fi
  root=$(pwd -P) && printf 'real %s\0' "$root" &&
    { find . -type f -printf '%s\n' | awk '{n++; b+=$1} END {printf "files %d %.0f", n, b}'; printf '\0'; } &&
    checks
elif [ -L "$d" ] && ! [ -e "$d" ]; then printf 'notdir a symlink to nothing\0'
elif [ -f "$d" ]; then printf 'notdir a file, not a directory\0'
elif [ -e "$d" ]; then printf 'notdir not a directory\0'; else printf 'missing\0'; fi
