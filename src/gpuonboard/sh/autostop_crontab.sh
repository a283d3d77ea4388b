#!/bin/sh
# `crontab_keep`: prints the login's crontab without our marker line and the entry after it
# when that is our watcher's (`... autostop.sh tick ...`), for `crontab -` to take back with or
# without a new entry. A user's own line after the marker (our entry deleted by hand, the marker
# left) is kept: before, it was dropped.
# A template: steps/autostop replaces __MARKER__ (CRON_MARKER, as one shell word) when loaded.
# Run by: steps/autostop (install.CRONTAB_FN): the install and the removal.

crontab_keep() {
  crontab -l 2>/dev/null | awk -v m=__MARKER__ '
    skip {skip = 0; if ($0 ~ /autostop\.sh'"'"'? tick( |$)/) next}
    $0 == m {skip = 1; next}
    {print}'
}
