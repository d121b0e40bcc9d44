#!/bin/bash
# A factory stand-in: stages the web area (the glidein scripts plus the
# gwtrace files a factory ships: gwtrace_setup.sh, gwtrace.sh,
# gwtrace-job-wrapper) and "submits" two glideins, one to a site that works,
# one to a site the VO has blacklisted. Nothing here knows about tracing.
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base=$(mktemp -d)
trap 'rm -rf "$base"' EXIT
mkdir "$base/web"
cp "$here"/web/* "$here/../../tests/data/shim/add_config_line.source" "$here/../../tests/data/shim/error_gen.sh" "$base/web/"
cp "$repo/shim/gwtrace_setup.sh" "$repo/shim/gwtrace-job-wrapper" "$repo/bash/gwtrace.sh" "$base/web/"
export DEMO_JOBS_DIR=$here/jobs

submit() {  # N SITE
  bash "$base/web/glidein_startup.sh" -name demo_glidein -entry "DEMO_Entry_$1" -site "$2" \
    -web "$base/web" -dir "$base" > "$base/job.$1.out" 2> "$base/job.$1.err"
  echo "glidein $1 at $2: exit code $?"
  grep -E '^(job |=== (Validation error|Glidein ending))' "$base/job.$1.out" "$base/job.$1.err" | sed 's/^[^:]*:/    /'
}

submit 1 DEMO_Good_Site
submit 2 DEMO_Broken_Site
