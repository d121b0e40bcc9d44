#!/usr/bin/env bash
# make demo: (1) a glidein-like run (examples/glidein) traced by `gwtrace run` with no
# change to its scripts, on the embedded default store: its trace tree; (2) what an
# operator looks at first: a demo factory's client log directories (written by
# examples/demo_factory.py, problems planted) backfilled into the same store (spans and
# glidein records), then read back from the store: the
# accounting summary in canonical hours and the top hints; then where to browse it.
# (examples/glidein_like.sh shows the bash API itself.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/glidein/run_demo.sh"
trace_id=$(gwtrace show --last | awk 'NR == 1 { print $2 }')

data=${GWTRACE_HOME:-$HOME/.local/share/gwtrace}
factory="$data/demo-factory"
echo
echo "== A demo factory: its client log directories, backfilled into the same store"
rm -rf "$factory"
python3 "$here/demo_factory.py" --out "$factory" --glideins "${DEMO_GLIDEINS:-1000}" --seed 7
gwtrace ingest --factory-logs "$factory"
# what a few glideins' sidecars sampled rode home in their .err (kind=metrics blocks): the resource hints
gwtrace ingest --ledger "$data/demo-ledger" "$factory/client"
echo
echo "== Where pilot time went (gwtrace account --bucket 1d)"
gwtrace account --bucket 1d --plot "$data/demo-accounting.svg"
echo "(picture: $data/demo-accounting.svg)"
echo
echo "== What to change first (gwtrace analyze --hints)"
hints=$(gwtrace analyze --hints)
# the first three of each ranking: pilot time lost, then capacity requested but not running (apart)
printf '%s\n' "$hints" | awk '/^$/ { next } /^ranked by/ { if (seen++) print ""; n = 0; print; next }
                              /^[0-9]+\. / { n++ } n <= 3 { print }'
first=$(printf '%s\n' "$hints" | sed -n 's/.*(trace \([0-9a-f]\{32\}\)).*/\1/p' | head -n 1)
echo
echo "Browse it: run 'gwtrace serve' (it reads the same store), then open"
echo "  http://127.0.0.1:4318/trace/$trace_id          (the traced glidein-like run)"
[[ -z $first ]] || echo "  http://127.0.0.1:4318/trace/$first          (a glidein behind the top hint)"
echo "  http://127.0.0.1:4318/hints                     (the hints, each with the glideins behind it)"
echo "  http://127.0.0.1:4318/analysis                  (where the time goes, per entry and phase)"
echo "  http://127.0.0.1:4318/accounting                (pilot time by category)"
echo "  http://127.0.0.1:4318/now                       (what is running now)"
