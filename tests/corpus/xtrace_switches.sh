#!/bin/bash
# xtrace turned on and off every way bash allows, inside and outside
# functions, with no function call in between: the trap of functions level
# runs unguarded while xtrace is off and must switch before the command that
# turns it on, so nothing of ours is ever printed. (Not set -v: bash echoes
# a DEBUG trap's text as it parses it, a limit in docs/shim.md.)
# expect:
#   xtrace_switches.sh OK
#     on_inside OK
#       leaf OK
#     leaf OK
#     leaf OK
#     off_inside OK
#     leaf OK
PS4='+ ${FUNCNAME[0]:-main}:$LINENO: '
leaf() { echo "leaf $1"; }
on_inside() { set -x; leaf a; }
off_inside() { set +x; }
on_inside
set +x
for i in 1 2; do echo "loop $i"; done
shopt -so xtrace
echo shopt-on
set +o xtrace
leaf b
builtin set -x
echo builtin-on
command set +x
echo quiet
set -o xtrace
leaf c
off_inside
echo after-off
set -ux
leaf d
set +ux
echo end
