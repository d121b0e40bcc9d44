#!/bin/bash
# Fails at sites on the VO's blacklist: the glidein must not run jobs there.
glidein_config=$1
# shellcheck source=/dev/null
source "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")

is_blacklisted() {  # SITE
  local blacklisted
  for blacklisted in DEMO_Broken_Site DEMO_Retired_Site; do
    [[ $1 == "$blacklisted" ]] && return 0
  done
  return 1
}

site=$(gconfig_get GLIDEIN_Site "$glidein_config")
if is_blacklisted "$site"; then
  "$error_gen" -error check_blacklist.sh VO_Config "Site $site is blacklisted" BlacklistedSite "$site"
  exit 1
fi
"$error_gen" -ok check_blacklist.sh
