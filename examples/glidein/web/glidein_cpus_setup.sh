#!/bin/bash
# How many cores the glidein may use (GLIDEIN_CPUS, or the node's).
glidein_config=$1
# shellcheck source=/dev/null
source "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
# add_condor_vars_line writes to $condor_vars_file
# shellcheck disable=SC2034
condor_vars_file=$(gconfig_get CONDOR_VARS_FILE "$glidein_config")
cpus=$(gconfig_get GLIDEIN_CPUS "$glidein_config")
[[ $cpus == auto || -z $cpus ]] && cpus=$(nproc)
gconfig_add GLIDEIN_CPUS "$cpus"
add_condor_vars_line GLIDEIN_CPUS I "$cpus" + N Y @
"$error_gen" -ok glidein_cpus_setup.sh GLIDEIN_CPUS "$cpus"
