#!/bin/sh
# A PreToolUse hook in the style of published Claude Code hooks: it reads the
# call as JSON on stdin and blocks recursive deletes. Exit 2 blocks the call;
# what it prints on stderr is what the model sees.
input=$(cat)
case "$input" in
  *'rm -rf'*|*'rm -fr'*)
    echo "Recursive deletes are blocked by the guard-rm hook; delete single files instead." >&2
    exit 2 ;;
esac
exit 0
