#!/bin/sh
# lookup_order: a command tool. Reads {"order_id": "…"} on stdin and prints
# the order as JSON on stdout; exits 1 for an unknown order.
set -eu
input=$(cat)
id=$(printf '%s' "$input" | sed -n 's/.*"order_id"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p')
case "$id" in
1042)
  printf '{"order_id":"1042","status":"in_transit","carrier":"Parcelo","promised":"2026-11-12","days_late":9,"last_scan":"Lyon hub, 2026-11-14"}\n'
  ;;
1043)
  printf '{"order_id":"1043","status":"delivered","carrier":"Parcelo","promised":"2026-11-18","days_late":0}\n'
  ;;
*)
  echo "no order with id \"$id\"" >&2
  exit 1
  ;;
esac
