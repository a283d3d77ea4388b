#!/bin/sh
# Removes the autostop watcher (`invoke autostop --cancel`): the cron entry first, then a tick
# that is running (e.g. its before_shutdown, up to before_timeout) would shut the box down after
# this cancel: it is stopped by the pid in its lock, after checking that the pid still is an
# autostop.sh process (a stale lock's pid may belong to another process now). Its before_shutdown
# command, if running, is left to finish. Its lock is removed only once it is gone; a tick that
# survives finds its config missing before acting and exits without shutting down (removing its
# lock and the dir). Only the files we own are removed: a mistaken autostop_dir never loses
# anything else.
# Values in variables set before it (install.remove_script, quoted by shell.quote): d the dir,
# cronfile the cron.d file to remove (or ""), crontab 1 to drop the crontab entry;
# CRONTAB_FN put before it. A template: __SCRIPT__ and __OWNED__ (OWNED_FILES) are replaced
# when loaded.
# Run by: steps/autostop (install.remove_script, AutostopStep.apply with state: absent).
# shellcheck disable=SC2154  # d, cronfile, crontab: set by install.remove_script

set -e
if [ -n "$cronfile" ]; then rm -f "$cronfile"; fi
if [ -n "$crontab" ]; then crontab_keep | crontab -; fi
alive() { grep -aqF __SCRIPT__ "/proc/$p/cmdline" 2>/dev/null; }
p=$(cat "$d/lock/pid" 2>/dev/null || true)
case "$p" in ""|*[!0-9]*) p="" ;; esac
if [ -n "$p" ] && alive; then
  kill "$p" 2>/dev/null || true; i=0
  while [ "$i" -lt 50 ] && alive; do sleep 0.1; i=$((i + 1)); done
fi
set --
# shellcheck disable=SC2043  # (OWNED_FILES: a list of names, put here when loaded)
for f in __OWNED__; do set -- "$@" "$d/$f"; done
rm -f "$@"
if [ -z "$p" ] || ! alive; then rm -rf "$d/lock"; fi
rmdir "$d" 2>/dev/null || true
