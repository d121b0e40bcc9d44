#!/bin/bash
# Replaced by dash from inside a function: the script's span and the
# function's are open, and nothing of bash runs again.
prepare() {
  echo "preparing"
  exec sh -c 'sleep 1; echo "dash: exiting 3"; exit 3'
}
prepare
echo "not reached"
