#!/bin/sh
# The template step's write: stdin to $q atomically, with $mode, printing its sha256 (see
# files.write_script for why each check is there). install makes the temp file beside it with
# O_EXCL and the mode before the rename; the rename happens only when the temp file's sha256
# is the rendered one ($want: a dropped link cuts stdin short); a hang-up or kill leaves no
# temp file. A $q that is a directory, device, FIFO or socket is refused; one that exists keeps
# its owner and group where the login may give them. With $follow, a symlink is written
# through to its final target and stays.
# Values in variables set before it (files.write_script, quoted by shell.quote): q the dest,
# d its directory, tmp the temp file's name, mode (octal), want the sha256, follow 1 or "",
# and the sentences cannot (an unresolvable link), isdir (a directory), special (not a file).
# Run by: steps/files.py (write_script, TemplateStep.apply).
# shellcheck disable=SC2154  # q, d, tmp, mode, want, follow, cannot, isdir, special: set before it

set -e
if [ -n "$follow" ] && [ -L "$q" ]; then
  q=$(readlink -f -- "$q") || { echo "$cannot" >&2; exit 1; }
  d=$(dirname -- "$q")
fi
[ -d "$d" ] || mkdir -p "$d"; t="$d/$tmp"; trap 'rm -f "$t"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
install -m "$mode" /dev/stdin "$t"; h=$(sha256sum < "$t"); h=${h%% *}
[ "$h" = "$want" ] || {
  echo "the host received a cut or altered file (sha256 $h): the link dropped while writing? run again" >&2
  exit 1
}
[ ! -d "$q" ] || { echo "$isdir" >&2; exit 1; }
[ ! -e "$q" ] || [ -f "$q" ] || [ -L "$q" ] || { echo "$special" >&2; exit 1; }
# a file that exists keeps its owner and group (a service's 0640 config stays readable by it; a
# replaced symlink's file gets its target's); chown clears a setuid bit, so the mode is set
# again after it
if [ -e "$q" ]; then chown "$(stat -L -c %u:%g "$q")" "$t" 2>/dev/null || true; chmod "$mode" "$t"; fi
mv -f "$t" "$q"; trap - EXIT; echo "$h"
