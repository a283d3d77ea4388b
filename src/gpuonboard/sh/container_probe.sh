#!/bin/sh
# The container step's read-only probe: which runtime answers (docker, else podman; through
# `sudo -n` when the user's own call is refused with "permission denied"), the login user and
# groups, the CDI specs, the runtime's info and the free space under its storage root, the local
# image under the first of its names the runtime holds, and the host's record of a passed smoke
# run for it, and the NVIDIA Container Toolkit's hook and mode; each part after a line
# `$M<kind>` (error, user, cdi, toolkit, other, info, df, image, smoke).
# Values set before it (container.state.probe_command, quoted by shell.quote): M the marker,
# F the smoke record's file (in double quotes: $HOME / $XDG_CACHE_HOME expand on the host), and
# the image's names as the positional arguments (`set --`).
# Run by: steps/container/state.py (probe_command; the batched fact probe, or the step's plan).
# shellcheck disable=SC2154  # M, F: set by container.state.probe_command before this script

c=; info=; pre=
printf '%ssmoke\n' "$M"; head -n 1 "$F" 2>/dev/null
# shellcheck disable=SC2086  # $1: '' or 'sudo -n', split into words on purpose
q() { if [ "$2" = docker ]; then $1 docker info --format '{{json .}}'; else $1 podman info --format json; fi; }
# A server answered: docker's info names its ServerVersion, podman's its store. docker >= 23
# exits 0 when it cannot reach its daemon, printing {"ServerErrors":["why"],"ClientInfo":...}
# (docker/cli cli/command/system/info.go; docker/cli#5900): that is no answer.
answered() { case $1 in *'"ServerErrors":["'*|*'"ServerErrors": ["'*|*'"ServerVersion":""'*|*'"ServerVersion": ""'*)
  return 1 ;; *'"ServerVersion":"'*|*'"ServerVersion": "'*|*'"store":'*) return 0 ;; esac; return 1; }
for x in docker podman; do
  info=$(q '' $x 2>/dev/null)
  rc=$?; if [ $rc = 0 ] && answered "$info"; then c=$x; break; fi
  # why: the daemon's own error from the info (not the last stderr line, which docker >= 23
  # ends with "errors pretty printing info"), else the plain info's last other error line
  err=$(printf '%s' "$info" | sed -n 's/.*"ServerErrors": *\["\([^]]*\)"\].*/\1/p' | sed 's/\\"/"/g' | head -n 1)
  [ -n "$err" ] || err=$($x info 2>&1 >/dev/null | grep -v '^errors pretty printing info' | sed 's/^ERROR: //' | tail -n 1)
  [ -n "$err" ] || [ "$rc" != 0 ] || err='its info names no server (is the daemon running?)'
  printf '%serror %s %s %s\n' "$M" $x $rc "$err"
  case "$err" in *ermission\ denied*)
    if info=$(q 'sudo -n' $x 2>/dev/null) && answered "$info"; then c=$x; pre='sudo -n'; break; fi ;; esac
done
printf '%suser %s %s %s\n' "$M" "$(id -u)" "$(id -un)" "$(id -nG | tr ' ' ,)"
printf '%scdi\n' "$M"; ls -1d /etc/cdi/* /var/run/cdi/* 2>/dev/null
# the NVIDIA Container Toolkit: its hook (all docker's --gpus needs: moby daemon/nvidia_linux.go),
# the runtime's configured mode, and whether this is a Tegra system (the toolkit's own test:
# /etc/nv_tegra_release, or /sys/devices/soc0/family starting "tegra"), where "auto" means csv
printf '%stoolkit\n' "$M"
command -v nvidia-container-runtime-hook 2>/dev/null ||
  for h in /usr/bin /usr/local/bin; do [ -x $h/nvidia-container-runtime-hook ] && { echo $h/nvidia-container-runtime-hook; break; }; done
printf 'mode %s\n' "$(sed -n 's/^[[:space:]]*mode[[:space:]]*=[[:space:]]*"\([a-z]*\)".*/\1/p' /etc/nvidia-container-runtime/config.toml 2>/dev/null | head -n 1)"
{ [ -f /etc/nv_tegra_release ] || case $(head -c 16 /sys/devices/soc0/family 2>/dev/null) in [Tt][Ee][Gg][Rr][Aa]*) true ;; *) false ;; esac; } && echo tegra
# container runtimes the step does not drive (HPC boxes: apptainer / singularity, enroot)
printf '%sother\n' "$M"; for x in apptainer singularity enroot; do command -v $x >/dev/null 2>&1 && echo $x; done
[ -n "$c" ] || exit 0
printf '%sinfo %s %s\n' "$M" "$c" "${pre:+sudo}"; printf '%s\n' "$info"
root=$(printf '%s' "$info" | sed -n 's/.*"\(DockerRootDir\|graphRoot\)": *"\([^"]*\)".*/\2/p' | head -n 1)
printf '%sdf\n' "$M"; [ -n "$root" ] && df -P -k "$root" 2>/dev/null | tail -n 1
for n in "$@"; do
  # shellcheck disable=SC2086  # $pre: '' or 'sudo -n', split into words on purpose
  # (the format: state.INSPECT_FORMAT)
  r=$($pre $c image inspect --format '{{.Id}} {{json .RepoDigests}} {{.Os}}/{{.Architecture}}' "$n" 2>/dev/null) || continue
  [ -n "$r" ] && { printf '%simage %s\n%s\n' "$M" "$n" "$r"; break; }
done
exit 0
