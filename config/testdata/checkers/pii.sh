#!/bin/sh
# A command checker: reads a check as JSON on stdin, prints a verdict.
echo '{"flagged": false}'
