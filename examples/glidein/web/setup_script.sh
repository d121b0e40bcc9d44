#!/bin/bash
# First custom script: where error_gen.sh is, the glidein's tmp directory.
glidein_config=$1
# shellcheck source=/dev/null
source "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
work_dir=$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")
mkdir -p "$work_dir/../tmp" || { "$error_gen" -error setup_script.sh WN_Resource "Cannot create tmp dir"; exit 1; }
gconfig_add TMP_DIR "$(cd "$work_dir/../tmp" && pwd)"
"$error_gen" -ok setup_script.sh
