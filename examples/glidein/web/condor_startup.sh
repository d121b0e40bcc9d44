#!/bin/bash
# condor_startup.sh stand-in (the glidein's last script): builds
# condor_job_wrapper.sh the way the real one does (ending in
# `exec $GLIDEIN_WRAPPER_EXEC`), turns condor_vars.lst into the user jobs'
# environment (STARTER_JOB_ENVIRONMENT), then a condor stand-in runs two user
# jobs through the wrapper, and reports.
glidein_config=$1
# shellcheck source=/dev/null
source "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
condor_vars_file=$(gconfig_get CONDOR_VARS_FILE "$glidein_config")
work_dir=$(gconfig_get GLIDEIN_WORK_DIR "$glidein_config")
jobs_dir=${DEMO_JOBS_DIR:?}

job_env=("PATH=/usr/bin:/bin")

# set_var NAME TYPE DEFAULT CONDOR_NAME REQ EXPORT USER_NAME (a condor_vars.lst row)
set_var() {
  local name=$1 def=$3 condor=$4 user=$7 val
  [[ -n $name ]] || return 0
  val=$(gconfig_get "$name" "$glidein_config")
  if [[ -z $val ]]; then
    [[ $def == - ]] && return 0
    eval val="$def"
  fi
  [[ $condor == + ]] && condor=$name
  case $user in
    -) ;;
    +) job_env+=("$name=$val") ;;
    @) job_env+=("$condor=$val") ;;
  esac
  eval "$name='$val'"
}

while read -r line; do
  [[ $line == \#* ]] && continue
  # shellcheck disable=SC2086
  set_var $line
done < "$condor_vars_file"

cat > "$work_dir/condor_job_wrapper.sh" <<EOF
#!/bin/sh

# Condor job wrappers must replace its own image
exec $GLIDEIN_WRAPPER_EXEC
EOF
chmod +x "$work_dir/condor_job_wrapper.sh"

# run_job CLUSTER PROC OWNER EXECUTABLE [ARGS...]: what the starter does.
run_job() {
  local cluster=$1 proc=$2 owner=$3 scratch
  shift 3
  scratch=$(mktemp -d "$work_dir/../execute.XXXXXX")
  printf 'ClusterId = %s\nProcId = %s\nOwner = "%s"\nGlobalJobId = "demo-schedd#%s.%s#%s"\nJobUniverse = 5\n' \
    "$cluster" "$proc" "$owner" "$cluster" "$proc" "$(date +%s)" > "$scratch/.job.ad"
  (cd "$scratch" && env -i "${job_env[@]}" _CONDOR_JOB_AD="$scratch/.job.ad" _CONDOR_SCRATCH_DIR="$scratch" \
     "$work_dir/condor_job_wrapper.sh" "$@" > "$scratch/_condor_stdout" 2> "$scratch/_condor_stderr")
  echo "job $cluster.$proc exited with $?: $(tail -n 1 "$scratch/_condor_stdout")"
}

condor_start=$(date +%s)
echo "=== Condor starting $(date) ($condor_start) ==="
run_job 1001 0 alice "$jobs_dir/analysis.sh" events.dat 4 &
run_job 1001 1 alice "$jobs_dir/summarize.py" &
wait
condor_end=$(date +%s)
echo "=== Condor ended $(date) ($condor_end) after $(( condor_end - condor_start )) ==="
"$error_gen" -ok condor_startup.sh AutoShutdown True CondorDuration "$(( condor_end - condor_start ))" TotalJobsNr 2
