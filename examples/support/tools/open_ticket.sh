#!/bin/sh
# open_ticket: a command tool. Reads the ticket as JSON on stdin, stores it
# under tickets/ in the agent's workspace (the working directory) and prints
# {"ticket_id": …}. The ticket id derives from AGENTRT_IDEMPOTENCY_KEY, so a
# retried call opens no second ticket.
set -eu
input=$(cat)
key=${AGENTRT_IDEMPOTENCY_KEY:?no idempotency key}
ticket="T-$(printf '%s' "$key" | cksum | cut -d' ' -f1)"
mkdir -p tickets
if [ ! -f "tickets/$ticket.json" ]; then
  printf '%s\n' "$input" > "tickets/$ticket.json"
fi
printf '{"ticket_id":"%s","status":"open"}\n' "$ticket"
