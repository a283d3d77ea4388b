#!/bin/sh
# The autostop step's read-only probe of a host: who the login is, the autostop dir and the cron
# mode, the host's clock, an unsafe dir (`unsafe`), the cron daemon (`crond_state`), the
# installed config's MAX_SECONDS, max_since and installed_at, the mode and sha256 of the script
# and config, which owned files are present, the cron.d file or the crontab entry, where the
# login finds the watched tools, and whether pgrep and ps exist; one `KIND VALUE` line each
# (probe._parse_probe reads them).
# Values in variables set before it (probe.state_probe_command): d the autostop dir, m cron.d or
# crontab, c the cron.d dir, mw why no cron daemon reads it ("" when one does), sp the shutdown
# command's program ("" for none), pp the --pid to
# watch ("" for none), sc 1 where the shutdown command runs through sudo (then the
# function sudo_check); UNSAFE_DIR_FN and CRON_DAEMON_FN put before it. A template:
# __SCRIPT__, __CONF__, __CRON_NAME__, __OWNED__ (OWNED_FILES), __MARKER__ (CRON_MARKER) and
# __TOOLS__ (WATCHED_TOOLS) are replaced when loaded.
# Run by: steps/autostop (probe.state_probe_command), in the batched fact probe.
# shellcheck disable=SC2154  # d, m, c, sp, pp, sc: set by probe.state_probe_command before this script

echo "uid $(id -u)"; echo "user $(id -un 2>/dev/null)"; echo "dir $d"; echo "mode $m"
echo "now $(date +%s)"
[ -n "${mw:-}" ] && echo "crondunread $mw"
if x=$(unsafe "$d"); then echo "dirunsafe $x"; fi
crond_state
# /proc's mount options: with hidepid a login other than root sees only its own processes
awk '$2 == "/proc" && $3 == "proc" { print "procopts " $4; exit }' /proc/mounts 2>/dev/null
[ -f "$d/__CONF__" ] && echo "oldmax $(sed -n "s/^MAX_SECONDS=//p" "$d/__CONF__" | head -n 1)"
# the --pid the installed config watches and the process it recorded (its start time and boot):
# a rerun with the same pid renews the rest and keeps that record, even once the job has ended
if [ -n "${pp:-}" ] && [ -f "$d/__CONF__" ]; then
  for k in PID PID_START PID_BOOT; do echo "old$k $(sed -n "s/^$k=//p" "$d/__CONF__" | head -n 1)"; done
fi
[ -f "$d/max_since" ] && echo "maxsince $(head -c 20 "$d/max_since")"
[ -f "$d/installed_at" ] && echo "installedat $(head -c 20 "$d/installed_at")"
for f in __SCRIPT__ __CONF__; do
  [ -f "$d/$f" ] && echo "file $f $(stat -c %a "$d/$f") $(sha256sum < "$d/$f" | cut -c1-64)"
done
for f in __OWNED__ lock; do [ -e "$d/$f" ] && echo "present $f"; done
[ -f "$c/__CRON_NAME__" ] &&
  echo "cronfile $(stat -c %a "$c/__CRON_NAME__") $(sha256sum < "$c/__CRON_NAME__" | cut -c1-64)"
if command -v crontab >/dev/null 2>&1; then
  echo "crontab_bin yes"
  crontab -l 2>/dev/null | awk -v m=__MARKER__ 'f{print "crontab " $0; f=0; next} $0==m{print "crontab " $0; f=1}'
else
  echo "crontab_bin no"
fi
# shellcheck disable=SC2043  # (WATCHED_TOOLS: a list of names, put here when loaded)
for t in __TOOLS__; do p=$(command -v "$t" 2>/dev/null) && echo "tool $t $p"; done
# the watcher's own utilisation query, once: how many GPUs answer with a number (the watcher
# checks that count when nvidia-smi exits non-zero), or that none does ([N/A] under MIG), so
# the watcher would never find the box idle
if p=$(command -v nvidia-smi 2>/dev/null); then
  if command -v timeout >/dev/null 2>&1; then set -- timeout -k 5 20 "$p"; else set -- "$p"; fi
  u=$("$@" --query-gpu=utilization.gpu --format=csv,noheader,nounits 2>/dev/null </dev/null)
  echo "gpuutilrc $?"
  printf '%s\n' "$u" | tr -d '\r' | while IFS= read -r l; do [ -n "$l" ] && echo "gpuutil $l"; done
fi
# a shutdown command run through sudo: may this login run it without a password (sudo -n -l
# CMD, which runs nothing; sudo_check is put before this script, `false` when there is none)
if [ -n "${sc:-}" ]; then
  o=$(sudo_check </dev/null 2>&1); echo "sudorc $?"
  echo "sudosaid $(printf '%s\n' "$o" | awk 'NF {l = $0} END {print substr(l, 1, 200)}')"
fi
# whether this is a whole machine or a container (facts/slice_signs.py SIGNS_SH, the checks'
# evidence too: PID 1's name, systemd's word, the engines' marks, PID 1's cgroups, the mounts only
# a container has), one `sign FILE<TAB>VALUE` line each: an init (systemd, init) powers a machine
# off; a container's entry command (bash, tini, sleep: RunPod, Vast.ai, a Kubernetes pod) cannot,
# and a container's init (systemd in LXC) powers off the container only, whatever `shutdown` says
(__SIGNS__) 2>/dev/null | while IFS= read -r l; do echo "sign $l"; done
# the shutdown command's program on the watcher's PATH: cron's /usr/bin:/bin and the dirs
# settings.sh.j2 adds (render.WATCHER_PATH; not the login's PATH: cron never reads ~/.bashrc)
# (sp: its programs, sudo first where it runs through sudo; the first one missing is named)
if [ -n "${sp:-}" ]; then
  miss=
  for p in $sp; do
    (PATH=/usr/bin:/bin:__WATCHER_PATH__
      command -v "$p") >/dev/null 2>&1 || { miss=$p; break; }
  done
  if [ -z "$miss" ]; then echo "shutprog yes"; else echo "shutprog no $miss"; fi
fi
# the --pid to watch (pp): alive (kill -0, its EPERM for another user's process, or /proc), its
# start time in clock ticks since boot (/proc/PID/stat field 22, counted after the command name,
# which may hold spaces and parentheses) and this boot: the watcher counts that very process,
# never a later one that got its number (after a reboot, or once the pids wrapped)
if [ -n "${pp:-}" ]; then
  if e=$(LC_ALL=C kill -0 "$pp" 2>&1) || case $e in *"not permitted"*) true ;; *) [ -d "/proc/$pp" ] ;; esac; then
    echo "pidalive yes"
  else
    echo "pidalive no"
  fi
  # shellcheck disable=SC2086  # (split into its fields on purpose: numbers and one state letter)
  st=$(cat "/proc/$pp/stat" 2>/dev/null) && st=${st##*) } && set -- $st && [ -n "${20:-}" ] &&
    echo "pidstart ${20}"
  echo "bootid $(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
fi
command -v pgrep >/dev/null 2>&1 || echo "pgrep no"
command -v ps >/dev/null 2>&1 || echo "ps no"
true
