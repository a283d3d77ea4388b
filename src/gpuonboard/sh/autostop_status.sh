#!/bin/sh
# `invoke autostop --status` on a host: whether the watcher is installed, its cron entry (or
# that it is MISSING), a cron daemon that does not run, the watcher's own `status`, and the last
# lines of its log; always exits 0 (the text is the answer).
# Values in variables set before it (step.status_command): d the autostop dir, m cron.d or
# crontab, c the cron.d dir, n how many log lines; CRON_DAEMON_FN put before it. A template:
# __SCRIPT__, __CRON_NAME__, __MARKER__ (CRON_MARKER) and __NO_CRON_DAEMON__ (NO_CRON_DAEMON),
# each as one shell word, are replaced when loaded.
# Run by: steps/autostop (step.status_command), in the batched fact probe.
# shellcheck disable=SC2154  # d, m, c, n: set by step.status_command before this script

if [ ! -f "$d/__SCRIPT__" ]; then
  echo "autostop is not installed (no $d/__SCRIPT__)"
else
  if [ "$m" = cron.d ]; then
    if [ -f "$c/__CRON_NAME__" ]; then echo "cron: $c/__CRON_NAME__"
    else echo "cron: MISSING ($c/__CRON_NAME__)"; fi
  elif crontab -l 2>/dev/null | grep -qxF __MARKER__; then
    echo "cron: the user's crontab"
  else
    echo "cron: MISSING (the user's crontab)"
  fi
  [ "$(crond_state)" = "crond no" ] && echo __NO_CRON_DAEMON__
  # what the watcher says (an OVERDUE line quotes the failed command's last words) and the last
  # log lines, each word of the commands that may be a secret (MASK_WORDS in the 0600 config,
  # apart by \037: a token a command's own output repeats, an older watcher's line that showed
  # the command in clear) shown as the mask, replaced as a literal string (awk's index) wherever
  # it stands, also joined to other text (`%2FTOKEN`, JSON's `\nTOKEN`, `token_TOKEN`): when in
  # doubt, mask (masking.command_secrets lists no plain word such as `shutdown`)
  # shellcheck disable=SC1091
  MASK_WORDS=$(. "$d/autostop.conf" >/dev/null 2>&1; printf '%s' "${MASK_WORDS-}") && export MASK_WORDS
  { sh "$d/__SCRIPT__" status; echo "last log lines:"
    tail -n "$n" "$d/autostop.log" 2>/dev/null | sed "s/^/  /"
  } | awk 'BEGIN { k = split(ENVIRON["MASK_WORDS"], w, "\037") }
    { for (i = 1; i <= k; i++) if (length(w[i]) >= 4) {
        out = ""; rest = $0
        while ((p = index(rest, w[i])) > 0) { out = out substr(rest, 1, p - 1) "********"; rest = substr(rest, p + length(w[i])) }
        $0 = out rest
      }
      print }'
fi
true
