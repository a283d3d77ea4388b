#!/bin/sh
# `crond_state`: is a cron daemon running? Prints "crond yes" for its process (Debian's cron,
# cronie's/busybox's crond, fcron), or, where /proc hides other users' processes from a non-root
# login, systemd's word for it; "crond no" when pgrep finds none; nothing when it cannot tell
# (no pgrep). `cron_d_unread`: why no cron daemon reads the cron.d dir $c (it does not exist; the
# daemon is busybox's crond, which reads its crontabs/ only), nothing when one does. Functions
# only: the scripts put after them call them.
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

# shellcheck disable=SC2154  # c: set by the probe before cron_d_unread is called
cron_d_unread() {
  [ -d "$c" ] || { echo "$c does not exist"; return 0; }
  for p in $(pgrep -x crond 2>/dev/null); do
    case $(readlink "/proc/$p/exe" 2>/dev/null) in
      */busybox*) echo "the cron daemon is busybox crond, which reads its crontabs only, never $c"; return 0 ;;
    esac
  done
}
