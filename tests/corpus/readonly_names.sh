#!/bin/bash
# set -e with readonly variables named like the locals a tracer would use
# (name, line, n, t, i, span, path, ...): declaring a local of a readonly
# name fails, and under set -e that ended the traced script with status 1.
# expect:
#   readonly_names.sh OK
#     work OK
#       helper OK
#     helper OK
set -e
readonly name=glidein line=1 n=2 t=3 i=4 k=5 span=6 path=/x parent=7 w=8 c=9 u=10 tp=11 site=12 a=13 s=14
helper() { echo "helper $1"; }
work() { helper inner; /bin/true; }
work
helper outer
echo "still here: $name $line $n"
