#!/bin/sh
# `crond_state`: is a cron daemon running? Prints "crond yes" for its process (Debian's cron,
# cronie's/busybox's crond, fcron), or, where /proc hides other users' processes from a non-root
# login, systemd's word for it; "crond no" when pgrep finds none; nothing when it cannot tell
# (no pgrep). A function only: the scripts put after it call it.
# Run by: steps/autostop (probe.CRON_DAEMON_FN): the state probe and the status probe.

crond_state() {
  if command -v pgrep >/dev/null 2>&1 && pgrep -x 'cron|crond|fcron' >/dev/null 2>&1; then
    echo "crond yes"
  elif command -v systemctl >/dev/null 2>&1 &&
    { systemctl is-active --quiet cron || systemctl is-active --quiet crond; } 2>/dev/null; then
    echo "crond yes"
  elif command -v pgrep >/dev/null 2>&1; then
    echo "crond no"
  fi
}
