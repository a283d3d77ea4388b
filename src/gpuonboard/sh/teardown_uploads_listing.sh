#!/bin/sh
# Lists a dir that gpuonboard's uploads may have written in (the data dir, or a dir holding a
# recorded upload) for teardown: `dir PATH` (resolved), `uid N` (this login's), then per entry
# `KIND MARK UID NAME` and the records that belong to it (`mark LINE`, `age`, `own`, `sealed`,
# `written DIGEST`, `extra ENTRY`, `older`, `lease AGE_S`, `lease AGE_S host`), each
# NUL-terminated; `none` when $d is not a directory. KIND: d (dir), l (symlink), f (other);
# MARK: c (a marked copy), s (a shard store), u (one a tree was unpacked from), i (a *.shards dir
# an interrupted upload left), else -.
# Values set before it (quoted by shell.quote): d the dir; chk non-empty in check mode (then
# nothing is written); mark the copy mark's name (uploads.COPY_MARK), lease the suffix of a lease
# beside a copy (uploads.LEASE_SUFFIX), inlease
# the lease's name inside a copy (uploadlock.LEASE_IN_COPY); w, written() and current() as in
# uploadlock (WRITTEN_DIR, WRITTEN_FN, CURRENT_LISTING_FN); fsnow as in upload_lease_fns.sh.
# Run by: steps/teardown/uploads.py (uploads_probe_command, recorded_probe_command).
# shellcheck disable=SC2154  # d, mark, lease, inlease, w: set by the module before this script

[ -d "$d" ] || { printf 'none\0'; exit 0; }
root=$(realpath -- "$d"); printf 'dir %s\0uid %s\0' "$root" "$(id -u)"
for p in "$d"/* "$d"/.[!.]* "$d"/..?*; do
  [ -e "$p" ] || [ -L "$p" ] || continue
  k=f; if [ -L "$p" ]; then k=l; elif [ -d "$p" ]; then k=d; fi; m=-; o=
  if [ "$k" = d ]; then
    [ -f "$p/$mark" ] && m=c; [ -f "$p/manifest.json" ] && m=s
    [ "$m" = s ] && [ -f "$p/manifest.unpacked.json" ] && m=u
    # a shard store's manifest in gpuonboard's own format (`own`), or age-encrypted (`sealed`)
    o=; case $m in s|u) o=$(head -c 40 -- "$p/manifest.json" 2>/dev/null | tr -d '\0') ;; esac
    case $o in '{"format": "gpuonboard-shards/'*) o=own ;; age-encryption.org/*) o=sealed ;; *) o= ;; esac
  fi
  a=
  # a *.shards dir: `m=i` when it holds no manifest but an interrupted upload's `.incoming-N` and
  # nothing but a shard store's own names (shards, their `.sum`s, unpack markers, manifests), so
  # no job's file; `a=1` when it holds age ciphertexts (encrypted shards)
  case "$k ${p##*/}" in "d "*.shards)
    if [ "$m" = - ]; then
      m=i; n=
      for q in "$p"/* "$p"/.[!.]* "$p"/..?*; do
        [ -e "$q" ] || [ -L "$q" ] || continue
        case "${q##*/}" in
          .incoming-[0-9]*) n=1 ;;
          unpacked-*|manifest.json|manifest.unpacked.json|*.tar.*) ;;
          *) m=-; break ;;
        esac
      done
      [ -n "$n" ] || m=-
    fi
    for q in "$p"/*.age; do [ -e "$q" ] && a=1; break; done ;;
  esac
  printf '%s %s %s %s\0' "$k" "$m" "$(stat -c %u -- "$p")" "${p##*/}"
  [ "$m" = c ] && printf 'mark %s\0' "$(head -n 1 -- "$p/$mark")"
  [ -n "$a" ] && printf 'age\0'
  [ -n "$o" ] && printf '%s\0' "$o"
  # a tree uploads listed what they wrote in (uploadlock.WRITTEN_DIR): `written DIGEST` (of its
  # listing now, which the removal compares again), then up to 3 `extra ENTRY`, entries there
  # that no upload wrote (a job's output, the user's own file, one changed since: its size or
  # mtime); `older` when the list is an older gpuonboard's alone (its files' `f SIZE REL`, no
  # mtime: no file there matches it, so the tree stays)
  if [ "$k" = d ]; then
    f=$(written "$root/${p##*/}")
    if [ -f "$f" ]; then
      printf 'written %s\0' "$(current "$p" | sha256sum | cut -c1-64)"
      current "$p" | LC_ALL=C comm -z -23 - "$f" | head -z -n 3 | sed -z 's/^/extra /'
      grep -qz '^F ' -- "$f" || { grep -qz '^f ' -- "$f" && printf 'older\0'; }
    fi
  fi
  # an upload's lease: how long ago it was refreshed (a running upload refreshes it often);
  # beside the copy, or inside it (where a data dir the login may not write keeps it). By the
  # clock of the lease's file system (fsnow), whose time its mtime holds, as the upload's own
  # take reads it: on NFS the host's `date` may be minutes off the server's. In check mode
  # ($chk set) nothing is written (fsnow makes a file beside the lease): the host's `date`,
  # said as such (`lease AGE host`)
  l=
  case "$k ${p##*/}" in
    "f ".*"$lease") l=$p ;;
    "d "*) [ -f "$p/$inlease" ] && ! [ -L "$p/$inlease" ] && l=$p/$inlease ;;
  esac
  if [ -n "$l" ] && t=$(stat -c %Y -- "$l" 2>/dev/null) && [ -n "$t" ]; then
    if [ -n "${chk:-}" ]; then
      printf 'lease %s host\0' "$(( $(date +%s) - t ))"
    else
      printf 'lease %s\0' "$(( $(fsnow "$l.now") - t ))"
    fi
  fi
done
true
