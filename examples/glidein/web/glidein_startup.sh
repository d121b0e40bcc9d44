#!/bin/bash
# A glidein_startup.sh stand-in: the phases of glideinWMS's real one
# (creation/web_base/glidein_startup.sh), much shortened, and no tracing in it.
#
#   glidein_startup.sh -name NAME -entry ENTRY -site SITE -web WEB_DIR -dir BASE_DIR
#
# Creates the work directory and glidein_config, "downloads" the files of the
# ordered file list from WEB_DIR and runs each executable one as a custom
# script (`script glidein_config main`), stops at the first validation error,
# then runs the last script (condor_startup.sh) and, at exit, the clean-up
# scripts in .gwms.d/exec/cleanup.

usage() {
  echo "Usage: glidein_startup.sh -name NAME -entry ENTRY -site SITE -web WEB_DIR -dir BASE_DIR" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    -name) glidein_name=$2 ;;
    -entry) glidein_entry=$2 ;;
    -site) glidein_site=$2 ;;
    -web) web_dir=$2 ;;
    -dir) base_dir=$2 ;;
    *) usage ;;
  esac
  shift 2
done
[[ -n $glidein_name && -n $glidein_entry && -n $glidein_site && -d $web_dir && -d $base_dir ]] || usage

startup_time=$(date +%s)
echo "Starting glidein_startup.sh at $(date) ($startup_time)"
glidein_uuid=$(cat /proc/sys/kernel/random/uuid)
echo "glidein_uuid    = '$glidein_uuid'"
echo "glidein_entry   = '$glidein_entry'"

# Work directory and the files that come with the glidein itself.
work_dir=$(mktemp -d "$base_dir/glide_XXXXXX") || exit 1
mkdir -p "$work_dir/main" "$work_dir/.gwms.d/exec/cleanup"
cp "$web_dir/add_config_line.source" "$work_dir/"
cd "$work_dir" || exit 1
glidein_config=$work_dir/glidein_config
{
  echo "# --- glidein_startup vals ---"
  echo "GLIDEIN_UUID $glidein_uuid"
  echo "GLIDEIN_Factory DEMO_Factory"
  echo "GLIDEIN_Name $glidein_name"
  echo "GLIDEIN_Entry_Name $glidein_entry"
  echo "GLIDEIN_Site $glidein_site"
  echo "GLIDEIN_CPUS 2"
  echo "GLIDEIN_WORK_DIR $work_dir/main"
  echo "ADD_CONFIG_LINE_SOURCE $work_dir/add_config_line.source"
  echo "ERROR_GEN_PATH $work_dir/main/error_gen.sh"
  echo "CONDOR_VARS_FILE $work_dir/main/condor_vars.lst"
} > "$glidein_config"
# shellcheck source=/dev/null
source "$work_dir/add_config_line.source"

glidein_exit() {
  local rc=$1 f
  for f in "$work_dir"/.gwms.d/exec/cleanup/*; do
    [[ -x $f ]] && "$f" "$glidein_config"
  done
  echo "=== Glidein ending $(date) ($(date +%s)) with code $rc after $(( $(date +%s) - startup_time )) ==="
  cd "$base_dir" && rm -rf "$work_dir"
  exit "$rc"
}

# fetch_file NAME TYPE: copy from the web area; run it if it is an exec file.
fetch_file() {
  local name=$1 type=$2 ret
  cp "$web_dir/$name" "$work_dir/main/$name" || glidein_exit 1
  [[ $type == exec ]] || return 0
  chmod +x "$work_dir/main/$name"
  echo "Executing (flags:) $work_dir/main/$name"
  "$work_dir/main/$name" glidein_config main < /dev/null
  ret=$?
  if [[ $ret -ne 0 ]]; then
    echo "=== Validation error in $work_dir/main/$name ===" >&2
    return 1
  fi
  echo "=== validation OK in $work_dir/main/$name (0) ==="
}

while read -r name type; do
  [[ -z $name || $name == \#* ]] && continue
  fetch_file "$name" "$type" || glidein_exit 1
done < "$web_dir/file_list.lst"

gconfig_add GLIDEIN_INITIALIZED 1
last_script_time=$(date +%s)
echo "=== Last script starting $(date) ($last_script_time) after validating for $(( last_script_time - startup_time )) ==="
cp "$web_dir/condor_startup.sh" "$work_dir/main/" && chmod +x "$work_dir/main/condor_startup.sh"
"$work_dir/main/condor_startup.sh" glidein_config &
wait $!
ret=$?
echo "=== Last script ended $(date) ($(date +%s)) with code $ret after $(( $(date +%s) - last_script_time )) ==="
glidein_exit "$ret"
