#!/bin/bash
# Functions named like commands and builtins; command/builtin bypass them.
# expect:
#   shadow_commands.sh OK
#     ls OK
#     echo OK
#     cd OK
#     printf OK
#     test OK
#     read OK
ls() { command ls -d / "$@"; }
echo() { builtin echo "[echo]" "$@"; }
cd() { builtin cd "$@" && builtin echo "now in $PWD"; }
printf() { builtin printf "<%s>" "$@"; builtin printf '\n'; }
test() { builtin test "$@"; builtin echo "test says $?"; }
read() { builtin read "$@"; }
ls
echo hello
cd /
printf a b
test -d /
read -r v <<<"input"; builtin echo "v=$v"
command echo plain
