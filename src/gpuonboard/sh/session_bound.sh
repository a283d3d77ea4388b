#!/bin/sh
# Runs @COMMAND@ and stops it, and every process under it, when the SSH session that started
# it goes away (see shell._SESSION_BOUND for why and how). A template: shell.until_session_ends
# replaces @COMMAND@, @TERM@, @KILL@ (built commands) and @GRACE@, @POLL@ (numbers).
# Run by: shell.until_session_ends (prove, acceptance, the container smoke run).

gw_pp() {
  gw_l=
  read -r gw_l <"/proc/$1/stat" || return 1
  gw_n=${gw_l#*"("}; gw_n=${gw_n%") "*}
  # shellcheck disable=SC2086  # split into stat's fields on purpose (numbers and a letter: no glob)
  set -- ${gw_l##*") "}
  [ "$#" -ge 20 ] || return 1
  gw_p=$2; gw_st=${20}
}
gw_links=; gw_c=$$
while [ "$gw_c" -gt 1 ] && gw_pp "$gw_c" 2>/dev/null; do
  case $gw_n in sh|dash|bash|ash|ksh|mksh|zsh|busybox|fish|tcsh|csh) ;; *) break ;; esac
  gw_links="$gw_links $gw_c:$gw_p"; gw_c=$gw_p
done
gw_here() {
  for gw_k in $gw_links; do
    gw_pp "${gw_k%:*}" 2>/dev/null && [ "$gw_p" = "${gw_k#*:}" ] || return 1
  done
}
gw_tree() {
  gw_t=" $1 "; gw_more=1
  while [ -n "$gw_more" ]; do
    gw_more=
    for gw_f in /proc/[0-9]*; do
      gw_q=${gw_f#/proc/}
      case $gw_t in *" $gw_q "*) continue ;; esac
      gw_pp "$gw_q" 2>/dev/null || continue
      case $gw_t in *" $gw_p "*) gw_t="$gw_t$gw_q "; gw_more=1 ;; esac
    done
  done
}
gw_alive() {  # the processes of pid:start list $1 that still run (not a pid reused meanwhile)
  gw_a=
  for gw_k in $1; do
    gw_pp "${gw_k%:*}" 2>/dev/null && [ "$gw_st" = "${gw_k#*:}" ] && gw_a="$gw_a ${gw_k%:*}"
  done
}
gw_stop() {
  trap '' TERM
  gw_tree "$gw_job"
  gw_ks=
  for gw_q in $gw_t; do gw_pp "$gw_q" 2>/dev/null && gw_ks="$gw_ks $gw_q:$gw_st"; done
  # shellcheck disable=SC2086  # a list of pids, split on purpose
  kill -s TERM $gw_t 2>/dev/null
  @TERM@
  gw_i=0
  # shellcheck disable=SC2170  # @GRACE@: a number put here by shell.until_session_ends
  while [ "$gw_i" -lt @GRACE@ ]; do
    gw_alive "$gw_ks"
    [ -n "$gw_a" ] || return 0
    sleep 1; gw_i=$((gw_i + 1))
  done
  gw_alive "$gw_ks"
  # shellcheck disable=SC2086  # a list of pids, split on purpose
  [ -z "$gw_a" ] || kill -s KILL $gw_a 2>/dev/null
  @KILL@
}
@COMMAND@ &
gw_job=$!
(
  gw_z=
  trap 'kill $gw_z 2>/dev/null; exit 0' TERM
  while :; do
    sleep @POLL@ & gw_z=$!; wait $gw_z
    kill -0 "$gw_job" 2>/dev/null || exit 0
    gw_here || { gw_stop; exit 0; }
  done
) </dev/null >/dev/null 2>&1 &
gw_w=$!
wait "$gw_job"; gw_s=$?
kill "$gw_w" 2>/dev/null
exit "$gw_s"
