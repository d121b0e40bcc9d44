#!/bin/bash
# Node checks: free disk, load, the tools the VO needs.
glidein_config=$1
# shellcheck source=/dev/null
source "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")

free_disk_mb() { df -Pm "$1" | awk 'NR == 2 {print $4}'; }
check_tools() {
  local tool
  for tool in awk sed grep tar gzip; do
    command -v "$tool" >/dev/null || return 1
  done
}

work_dir=$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")
disk=$(free_disk_mb "$work_dir")
if (( disk < 100 )); then
  "$error_gen" -error validate_node.sh WN_Resource "Only $disk MB free" FreeDiskMB "$disk"
  exit 1
fi
check_tools || { "$error_gen" -error validate_node.sh WN_Resource "Missing tools"; exit 1; }
gconfig_add GLIDEIN_FREE_DISK_MB "$disk"
"$error_gen" -ok validate_node.sh FreeDiskMB "$disk"
