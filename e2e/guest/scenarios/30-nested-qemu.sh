# (d) A second QEMU inside the guest (TCG, -S, 128M) with four pcie-root-ports and QMP on a unix
# socket: vfio-pci hot-plug of what scenarios 10/20 bound, through OUR QMP client (qmp/, as the
# program vfio-gpu-e2e-qmp: one command per run), with QEMU's exact refusals recorded; then
# `vfio-gpu audit` reads the VM back. One exec per QMP command (~0.1-0.2 s each under TCG).

if ! project_bin vfio-gpu-e2e-qmp; then
  skip nested-qmp "no vfio-gpu-e2e-qmp in ${E2E_BIN:-<no bin dir>} yet (built with the tests)"
  return 0
fi
qmp_bin=$REPLY

nested_pid=
trap 'stop_nested_qemu "$nested_pid"' EXIT
sock=$E2E_WORK/nested-qmp.sock
if ! start_nested_qemu "$sock"; then
  fail nested-qemu-start "qemu-system-x86_64 did not start: $REPLY"
  return 0
fi
# shellcheck disable=SC2153 # NESTED_PID is set by start_nested_qemu (lib.sh)
nested_pid=$NESTED_PID
pass nested-qemu-start "nested QEMU up (-S, TCG, 128M) in ${NESTED_SECS}s, QMP on $sock"

# qmp COMMAND [ARGS]: one command through vfio-gpu-e2e-qmp. QMP_RC (0 returned, 1 QEMU refused,
# 3 no answer), QMP_OUT (the return JSON or QEMU's desc; our own error when there was no answer),
# QMP_SECS (wall time, the exec included).
qmp() {
  local argv=(--socket "$sock" --timeout 30 --execute "$1") t0=${EPOCHREALTIME/./} t1
  [[ -n ${2:-} ]] && argv+=(--args "$2")
  QMP_OUT=$("$qmp_bin" "${argv[@]}" 2>&1)
  QMP_RC=$?
  t1=${EPOCHREALTIME/./}
  printf -v QMP_SECS '%d.%d' $(((t1 - t0) / 1000000)) $(((t1 - t0) / 100000 % 10))
}
# vfio_add BDF ID BUS: device_add vfio-pci host=BDF.
vfio_add() { qmp device_add "{\"driver\":\"vfio-pci\",\"host\":\"$1\",\"id\":\"$2\",\"bus\":\"$3\"}"; }
# expect_refused NAME WANT: the last add must be refused with exactly WANT (QEMU's desc).
expect_refused() {
  local what="device_add vfio-pci host=$3"
  if ((QMP_RC == 0)); then
    fail "$1" "$what was accepted; want QEMU's refusal '$2'"
    return
  fi
  info "$1" "QEMU said: $QMP_OUT"
  if ((QMP_RC == 1)) && [[ $QMP_OUT == "$2" ]]; then
    pass "$1" "$what refused in ${QMP_SECS}s: $QMP_OUT"
  else
    fail "$1" "$what: exit $QMP_RC, '$QMP_OUT'; want exit 1 and '$2'"
  fi
}

qmp query-version
if ((QMP_RC != 0)); then
  fail nested-qmp "vfio-gpu-e2e-qmp cannot talk QMP on $sock (exit $QMP_RC): $QMP_OUT"
  return 0
fi
version=
for part in major minor micro; do  # QEMU's order is micro, minor, major
  [[ $QMP_OUT =~ \"$part\":([0-9]+) ]] && version+=${version:+.}${BASH_REMATCH[1]}
done
pass nested-qmp "vfio-gpu-e2e-qmp: greeting from QEMU ${version:-?}, capabilities negotiated, query-version answered in ${QMP_SECS}s"

vfio_add "$LONE_EDU" gpu0 rp0
if ((QMP_RC == 0)); then
  pass nested-hotplug "device_add vfio-pci host=$LONE_EDU bus=rp0 took ${QMP_SECS}s"
else
  info nested-hotplug "QEMU said: $QMP_OUT"
  fail nested-hotplug "device_add vfio-pci host=$LONE_EDU bus=rp0: exit $QMP_RC, $QMP_OUT"
fi

qmp qom-get '{"path":"/machine/peripheral/gpu0","property":"host"}'
if ((QMP_RC == 0)) && [[ $QMP_OUT == "\"$LONE_EDU\"" ]]; then
  pass nested-qom-host "qom-get /machine/peripheral/gpu0 host = $QMP_OUT"
else
  fail nested-qom-host "qom-get /machine/peripheral/gpu0 host: exit $QMP_RC, $QMP_OUT; want \"$LONE_EDU\""
fi

vfio_add "$LONE_EDU" gpu0dup rp1
expect_refused nested-duplicate-refused "vfio $LONE_EDU: device is already attached" "$LONE_EDU"
group_of "$MF_GPU"
vfio_add "$MF_GPU" gpu1 rp1
expect_refused nested-non-viable-refused "vfio $MF_GPU: group $REPLY is not viable" "$MF_GPU"
group_of "$LONE_NVME"
vfio_add "$LONE_NVME" gpu2 rp1
expect_refused nested-not-vfio-refused \
  "vfio $LONE_NVME: failed to open /dev/vfio/$REPLY: No such file or directory" "$LONE_NVME"

vfio_add "$SWITCH_EDU" gpu3 rp2
if ((QMP_RC == 0)); then
  pass nested-shared-group "device_add host=$SWITCH_EDU (switch group, all members on vfio-pci) took ${QMP_SECS}s"
else
  fail nested-shared-group "device_add host=$SWITCH_EDU (switch group): exit $QMP_RC, $QMP_OUT"
fi

# Our audit reads the VM back (each of our runs above closed its session: one client at a time).
if project_bin vfio-gpu; then
  audit_out=$("$REPLY" audit --qmp "$sock" --timeout 30 2>&1)
  arc=$?
  while IFS= read -r line; do info nested-audit "$line"; done <<<"$audit_out"
  present=()
  while read -r bdf status ids _; do
    [[ $status == present && ($bdf == "$LONE_EDU" && $ids == gpu0 || $bdf == "$SWITCH_EDU" && $ids == gpu3) ]] &&
      present+=("$bdf")
  done <<<"$audit_out"
  if ((arc == 0 && ${#present[@]} == 2)); then
    pass nested-audit "vfio-gpu audit --qmp: exit 0, $LONE_EDU (gpu0) and $SWITCH_EDU (gpu3) present once"
  else
    fail nested-audit "vfio-gpu audit --qmp: exit $arc, present: ${present[*]:-none}; want $LONE_EDU (gpu0) and $SWITCH_EDU (gpu3)"
  fi
else
  skip nested-audit "no vfio-gpu in ${E2E_BIN:-<no bin dir>} yet"
fi

# SIGTERM: QEMU exits cleanly and lets go of the groups before later scenarios rebind their devices.
stop_nested_qemu "$nested_pid"
nested_pid=
[[ -s ${sock%.sock}.log ]] && info nested-qemu "stderr: $(tr '\n' ' ' <"${sock%.sock}.log")"
