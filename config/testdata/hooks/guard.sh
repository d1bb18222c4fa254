#!/bin/sh
# Refuses rm -rf in shell commands; reads the hook input on stdin.
if grep -q 'rm -rf'; then
  echo '{"decision": "block", "reason": "rm -rf is not allowed"}'
fi
exit 0
