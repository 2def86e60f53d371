#!/bin/bash
# Guest side of the e2e stage: runs inside the guest, chrooted into the host's root (see init), with
# stdout on the results serial port. Runs every scenarios/NN-*.sh in name order, each in its own bash
# with lib.sh and topology.env sourced and a time limit, so one hang costs one scenario, not the run.
#
# Environment (from the kernel command line, via init):
#   E2E_DIR            this directory, as a path in the shared host root
#   E2E_BIN            the build's bin dir; scenarios SKIP the checks whose binaries aren't there yet
#   E2E_ONLY           a bash regex on scenario names (e.g. "bind|nested"); empty = all
#   E2E_STEP_TIMEOUT   seconds one scenario may take
#
# Scenarios run in order and share the guest's state: 10 binds what 30 hot-plugs. A new scenario is a
# new file; it reports with pass/fail/skip/info (lib.sh) and must report at least one result.

cd "$E2E_DIR" || { echo "E2E-RESULT guest-main FAIL cannot cd to $E2E_DIR"; exit 1; }
read -r up _ </proc/uptime
echo "E2E-INFO guest userspace at ${up}s, kernel $(uname -r), bin=${E2E_BIN:-none}"
export E2E_CONFIG=$E2E_DIR/emulated-gpus.json
export E2E_WORK=/run/e2e
mkdir -p "$E2E_WORK"

for s in scenarios/[0-9]*.sh; do
  name=${s##*/}
  name=${name%.sh}
  if [[ -n $E2E_ONLY && ! $name =~ $E2E_ONLY ]]; then
    continue
  fi
  read -r t0 _ </proc/uptime
  # tee, not a file printed afterwards: if the guest dies mid-scenario, what it said is already out.
  timeout --kill-after=5 "$E2E_STEP_TIMEOUT" bash -c \
    'source ./lib.sh && source ./topology.env && source "$1"' "$name" "$s" 2>&1 | tee "$E2E_WORK/$name.out"
  rc=${PIPESTATUS[0]}
  read -r t1 _ </proc/uptime
  if ((rc == 124 || rc == 137)); then
    echo "E2E-RESULT $name FAIL timed out after ${E2E_STEP_TIMEOUT}s (see the lines above)"
  elif ! grep -q '^E2E-RESULT ' "$E2E_WORK/$name.out"; then
    echo "E2E-RESULT $name FAIL reported no result (exit $rc)"
  fi
  echo "E2E-INFO timing $name took $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')s"
done
exit 0
