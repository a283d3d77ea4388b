#!/bin/sh
# The probe of teardown_containers: `down CLI` per container runtime installed but not answering,
# `cli CLI` for the one that answers (docker first, then podman), then `ctr NAME` per container
# carrying the label or named, and `img REF` per image ref present.
# Arguments: $1 the label key, $2 how many names follow, the container names, then the image refs.
# Run by: steps/teardown/containers.py (TeardownContainersStep's probe).

label=$1; count=$2; shift 2
c=
for x in docker podman; do
  command -v $x >/dev/null 2>&1 || continue
  if $x info >/dev/null 2>&1; then c=$x; break; else echo "down $x"; fi
done
[ -n "$c" ] || exit 0
echo "cli $c"
$c ps -a --filter "label=$label" --format '{{.Names}}' | sed 's/^/ctr /'
i=0
for n; do
  i=$((i + 1))
  [ -n "$n" ] || continue
  if [ "$i" -le "$count" ]; then
    $c container inspect "$n" >/dev/null 2>&1 && echo "ctr $n"
  else
    $c image inspect "$n" >/dev/null 2>&1 && echo "img $n"
  fi
done
true
