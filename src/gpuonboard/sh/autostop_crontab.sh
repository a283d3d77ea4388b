#!/bin/sh
# `crontab_keep`: prints the login's crontab without our marker line and the entry after it
# (the autostop entry), for `crontab -` to take back with or without a new entry.
# A template: steps/autostop replaces __MARKER__ (CRON_MARKER, as one shell word) when loaded.
# Run by: steps/autostop (install.CRONTAB_FN): the install and the removal.

crontab_keep() {
  crontab -l 2>/dev/null | awk -v m=__MARKER__ 'skip{skip=0; next} $0==m{skip=1; next} {print}'
}
