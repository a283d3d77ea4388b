#!/bin/sh
# The container step's read-only probe: which runtime answers (docker, else podman; through
# `sudo -n` when the user's own call is refused with "permission denied"), the login user and
# groups, the CDI specs, the runtime's info and the free space under its storage root, the local
# image under the first of its names the runtime holds, and the host's record of a passed smoke
# run for it; each part after a line `$M<kind>` (error, user, cdi, info, df, image, smoke).
# Values set before it (container.state.probe_command, quoted by shell.quote): M the marker,
# F the smoke record's file (in double quotes: $HOME / $XDG_CACHE_HOME expand on the host), and
# the image's names as the positional arguments (`set --`).
# Run by: steps/container/state.py (probe_command; the batched fact probe, or the step's plan).
# shellcheck disable=SC2154  # M, F: set by container.state.probe_command before this script

c=; info=; pre=
printf '%ssmoke\n' "$M"; head -n 1 "$F" 2>/dev/null
# shellcheck disable=SC2086  # $1: '' or 'sudo -n', split into words on purpose
q() { if [ "$2" = docker ]; then $1 docker info --format '{{json .}}'; else $1 podman info --format json; fi; }
for x in docker podman; do
  info=$(q '' $x 2>/dev/null)
  rc=$?; if [ $rc = 0 ]; then c=$x; break; fi
  err=$($x info 2>&1 >/dev/null | tail -n 1)
  printf '%serror %s %s %s\n' "$M" $x $rc "$err"
  case "$err" in *ermission\ denied*)
    if info=$(q 'sudo -n' $x 2>/dev/null); then c=$x; pre='sudo -n'; break; fi ;; esac
done
printf '%suser %s %s %s\n' "$M" "$(id -u)" "$(id -un)" "$(id -nG | tr ' ' ,)"
printf '%scdi\n' "$M"; ls -1d /etc/cdi/* /var/run/cdi/* 2>/dev/null
[ -n "$c" ] || exit 0
printf '%sinfo %s %s\n' "$M" "$c" "${pre:+sudo}"; printf '%s\n' "$info"
root=$(printf '%s' "$info" | sed -n 's/.*"\(DockerRootDir\|graphRoot\)": *"\([^"]*\)".*/\2/p' | head -n 1)
printf '%sdf\n' "$M"; [ -n "$root" ] && df -P -k "$root" 2>/dev/null | tail -n 1
for n in "$@"; do
  # shellcheck disable=SC2086  # $pre: '' or 'sudo -n', split into words on purpose
  r=$($pre $c image inspect --format '{{.Id}} {{json .RepoDigests}}' "$n" 2>/dev/null) || continue
  [ -n "$r" ] && { printf '%simage %s\n%s\n' "$M" "$n" "$r"; break; }
done
exit 0
