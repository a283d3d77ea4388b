#!/bin/sh
# Installs (or updates) the autostop watcher in one run: makes the dir (0700; one that exists
# keeps its mode), checks it is still safe (`unsafe`: exit 3), writes max_since (or removes it),
# the script and the config, installed_at once, the heartbeat lease, then the cron entry last (so
# cron never runs a half-installed watcher); each file through a temp file beside it (O_EXCL) +
# chmod + rename. Prints the sha256 of the script and the config.
# Values in variables set before it (install.install_script, quoted by shell.quote): d the dir,
# since max_since's text ("" when max-hours is off), script, conf (the files' texts), lease 1 to
# renew the heartbeat lease, m cron.d or crontab, c the cron.d dir, cron the cron.d file's text
# or the crontab lines; UNSAFE_DIR_FN and CRONTAB_FN put before it. A template: __SCRIPT__,
# __CONF__ and __CRON_NAME__ are replaced when loaded. It arrives on `sh -s`'s stdin, never in
# a command line (the config may carry a token; `ps` shows a command line to every user).
# Run by: steps/autostop (install.install_script, AutostopStep.apply).
# shellcheck disable=SC2154  # d, since, script, conf, lease, m, c, cron: set by install_script

set -e; umask 077
# put DIR NAME MODE TEXT: TEXT to a temp file beside DIR/NAME (O_EXCL: noclobber, so a name
# planted there meanwhile, a symlink included, is never written through), chmod, rename
put() {
  rm -f "$1/.$2.$$.tmp"; (set -C; printf %s "$4" > "$1/.$2.$$.tmp"); chmod "$3" "$1/.$2.$$.tmp"
  mv -f "$1/.$2.$$.tmp" "$1/$2"
}
# a directory that exists (a chosen autostop_dir such as /data) keeps its mode
[ -d "$d" ] || { mkdir -p "$d"; chmod 700 "$d"; }
# checked again where it is written (the probe ran before the other steps)
if x=$(unsafe "$d"); then printf 'the autostop directory is not safe any more: %s\n' "$x" >&2; exit 3; fi
# an earlier install's entry in the other place (the cron.d file, our crontab entry) goes first:
# cron ran both watchers, the earlier one with its old settings (before anything is written, so
# a login that cannot remove it changes nothing)
if [ "$m" = cron.d ]; then
  if command -v crontab >/dev/null 2>&1 && o=$(crontab -l 2>/dev/null) && k=$(crontab_keep) && [ "$k" != "$o" ]; then
    printf '%s\n' "$k" | crontab -
  fi
elif [ -e "$c/__CRON_NAME__" ] && ! rm -f "$c/__CRON_NAME__" 2>/dev/null; then
  printf '%s\n' "an earlier install's entry $c/__CRON_NAME__ would still run a watcher, and this login cannot remove it: remove it as root, then rerun" >&2
  exit 5
fi
# before the config, so a tick never pairs a new --max-hours with an old start
if [ -n "$since" ]; then put "$d" max_since 600 "$since"; else rm -f "$d/max_since"; fi
put "$d" __SCRIPT__ 755 "$script"
put "$d" __CONF__ 600 "$conf"
[ -f "$d/installed_at" ] || date +%s > "$d/installed_at"
if [ -n "$lease" ]; then
  # lease_up: the same moment in seconds since boot, and the boot: the watcher counts the
  # lease's age on the uptime within that boot (a step of the wall clock does not make it run
  # out early); written first, it names the lease it belongs to
  l=$(date +%s); u=$(cut -d. -f1 /proc/uptime 2>/dev/null || true)
  b=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || true)
  printf '%s %s %s\n' "$l" "$u" "$b" > "$d/.lease_up.tmp"; mv -f "$d/.lease_up.tmp" "$d/lease_up"
  echo "$l" > "$d/.lease.tmp"; mv -f "$d/.lease.tmp" "$d/lease"
fi
if [ "$m" = cron.d ]; then
  # (never made here: a dir that no cron daemon reads would run nothing; the probe refuses it)
  [ -d "$c" ] || { echo "the cron.d directory $c does not exist, so no cron daemon reads it" >&2; exit 4; }
  # a name with a dot is ignored by cron, so the temp file never runs
  put "$c" __CRON_NAME__ 644 "$cron"
else
  ( crontab_keep; printf '%s\n' "$cron" ) | crontab -
fi
cd "$d"; sha256sum __SCRIPT__ __CONF__
