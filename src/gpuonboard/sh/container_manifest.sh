#!/bin/sh
# The container step's read-only manifest probe: GET /v2/REPO/manifests/REF with curl (Accept:
# OCI/Docker v2 and lists) at each URL in turn; on a 401 with a Bearer challenge the token is
# fetched from the challenge's realm, used only when it is https:// (http:// only on loopback,
# for a registry on loopback), and the basic credentials go there only when its host is one of
# the trusted hosts. Prints `$M ok` and the body, or `$M error WHY`. stdin: the curl config
# (`user = "name:password"`, or nothing); every curl starts with -q (no ~/.curlrc).
# Values set before it (container.pull.manifest_command, quoted by shell.quote): M the marker,
# h the Accept header, scope the token scope, reg the registry (lowercased), loop 1 when the
# registry is on loopback, T the trusted hosts one a line, follow 1 for a blob (redirects
# followed), and the URLs as the positional arguments (`set --`).
# Run by: steps/container/pull.py (manifest_command; the container step's plan).
# shellcheck disable=SC2154  # M, h, scope, reg, loop, T, follow: set by manifest_command before this script
# shellcheck disable=SC2018,SC2019  # host names and schemes: ASCII, lowercased as such

cfg=$(cat)
command -v curl >/dev/null 2>&1 || { printf '%serror no curl on the host\n' "$M"; exit 0; }
o='--connect-timeout 5 --max-time 60 -fsS'; why=unreachable
# a blob (follow=1): registries redirect it to a CDN; curl -L keeps --proto-redir's scheme and
# sends no credentials or Authorization header to another host
[ -z "$follow" ] || o="$o -L"
# host[:port] lowercased, without the scheme's default port
hp() { case $1 in https) d=443 ;; *) d=80 ;; esac
  x=$(printf '%s' "$2" | tr 'A-Z' 'a-z'); printf '%s' "${x%:"$d"}"; }
for url in "$@"; do
  case $url in https:*) p='=https' ;; *) p='=http,https' ;; esac
  # shellcheck disable=SC2086  # $o: curl's options, split into words on purpose
  if body=$(printf '%s\n' "$cfg" | curl -q $o --proto "$p" --proto-redir "$p" -K - -H "$h" --url "$url" 2>/dev/null); then
    printf '%sok\n%s\n' "$M" "$body"; exit 0; fi
  auth=$(curl -q -sS --connect-timeout 5 --max-time 30 --proto "$p" --proto-redir "$p" -o /dev/null -D - -H "$h" --url "$url" 2>/dev/null | tr -d '\r' | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: *[Bb]earer *//p')
  [ -n "$auth" ] || continue
  why='registry refused the credentials'
  realm=$(printf '%s' "$auth" | sed -n 's/.*realm="\([^"]*\)".*/\1/p')
  svc=$(printf '%s' "$auth" | sed -n 's/.*service="\([^"]*\)".*/\1/p')
  # the realm's scheme and authority (host[:port]); anything odd is refused
  rs=; ra=
  case $realm in *://*) rs=$(printf '%s' "${realm%%://*}" | tr 'A-Z' 'a-z'); rest=${realm#*://}
    ra=$(printf '%s' "${rest%%[/?#]*}" | tr 'A-Z' 'a-z') ;; esac
  case $ra in '[::1]'|'[::1]:'*) rh='[::1]' ;; *) rh=${ra%:*} ;; esac
  rp=; ok=1
  case $ra in '') ra=none; ok= ;; *[!]a-z0-9.:_[-]*) ra=unusable; ok= ;; esac
  case $rs in [a-z]*) case $rs in *[!a-z0-9+.-]*) rs='not a URL' ;; esac ;;
    *) rs='not a URL' ;; esac
  [ ${#rs} -le 20 ] || rs='not a URL'
  if [ -n "$ok" ]; then
    case $rs in
      https) rp='=https' ;;
      http) case $url in http:*) [ -z "$loop" ] || case $rh in
        localhost|'[::1]') rp='=http' ;;
        127.*.*.*) case $rh in *[!0-9.]*) ;; *) rp='=http' ;; esac ;;
      esac ;; esac ;;
    esac
  fi
  [ -n "$rp" ] || { why="the token realm of registry $reg (scheme $rs, host $ra) was refused: only an https:// realm is used (http:// only on loopback for a registry on loopback)"; continue; }
  kc=; rn=$(hp "$rs" "$ra")
  while IFS= read -r t; do [ "$rn" = "$(hp "$rs" "$t")" ] && kc=$cfg; done <<HOSTS
$T
HOSTS
  # shellcheck disable=SC2086  # $o: curl's options, split into words on purpose
  tok=$(printf '%s\n' "$kc" | curl -q $o --proto "$rp" --proto-redir "$rp" -K - -G --data-urlencode "service=$svc" --data-urlencode "scope=$scope" --url "$realm" 2>/dev/null | tr ',' '\n' | sed -n 's/.*"\(access_\)\{0,1\}token": *"\([^"]*\)".*/\2/p' | head -n 1)
  [ -n "$tok" ] || continue
  # shellcheck disable=SC2086  # $o: curl's options, split into words on purpose
  if body=$(printf 'header = "Authorization: Bearer %s"\n' "$tok" | curl -q $o --proto "$p" --proto-redir "$p" -K - -H "$h" --url "$url" 2>/dev/null); then
    printf '%sok\n%s\n' "$M" "$body"; exit 0; fi
done
printf '%serror %s\n' "$M" "$why"
