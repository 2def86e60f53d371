# (e) The real vfio-gpu-plugin against the guest's real sysfs and /dev/vfio, registered with a kubelet
# stand-in that speaks the kubelet's protocol (vfio-gpu-fake-kubelet: serves Registration on
# <kubelet dir>/kubelet.sock, dials the plugin's socket, streams ListAndWatch and prints each update
# with its CLOCK_REALTIME stamp). A lone vfio-bound unit is Healthy; unbinding it from vfio-pci (a real
# unbind uevent) makes it Unhealthy within 100 ms of the write; the rebind makes it Healthy again; the
# plugin is the same process throughout and registered once. A member of a two-device group left
# with no driver takes its unit out of service until it is rebound.

if ! project_bin vfio-gpu-plugin; then
  skip plugin-health "no vfio-gpu-plugin in ${E2E_BIN:-<no bin dir>} yet"
  return 0
fi
plugin_bin=$REPLY
if ! project_bin vfio-gpu-fake-kubelet; then
  skip plugin-health "no vfio-gpu-fake-kubelet in ${E2E_BIN:-<no bin dir>} yet (test/fakes)"
  return 0
fi
kubelet_bin=$REPLY

res=vfio-gpu.io/pgpu
work=$E2E_WORK/plugin
kdir=$work/kubelet cdi=$work/cdi run=$work/run
mkdir -p "$kdir" "$cdi" "$run"
# The selection of emulated-gpus.json plus the plugin's own keys: real /sys and /dev, everything it
# writes in the guest's tmpfs, one resource name for all the emulated vendors, no metrics port.
read -r -d '' selection <"$E2E_CONFIG"
printf '%s,\n  "resource_name": "%s", "sysfs_root": "/sys", "dev_root": "/dev", "kubelet_dir": "%s",\n  "cdi_dir": "%s", "run_dir": "%s", "metrics_address": ""\n}\n' \
  "${selection%\}*}" "$res" "$kdir" "$cdi" "$run" >"$work/config.json"

# The unit: the lone edu, on vfio-pci (scenario 10 bound it and the switch group; again here so that
# --only plugin works alone). A unit's ID is its lowest GPU's BDF (hostmodel/scanner.cc).
for bdf in "$LONE_EDU" "$SWITCH_EDU" "$SWITCH_NIC"; do
  bind "$bdf" vfio-pci || { driver_of "$bdf"; fail plugin-health "$bdf stayed on '${REPLY:-none}', not vfio-pci"; return 0; }
done
group_of "$LONE_EDU"
group=$REPLY
unit=$LONE_EDU

plugin_pid='' kubelet_pid=''
cleanup() {
  [[ -n $plugin_pid ]] && kill "$plugin_pid" 2>/dev/null
  [[ -n $kubelet_pid ]] && kill "$kubelet_pid" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT

# The stand-in's lines arrive through a FIFO: `read -t` blocks until the next one, no polling.
mkfifo "$work/events"
"$kubelet_bin" --dir "$kdir" --resource "$res" >"$work/events" 2>"$work/fake-kubelet.err" &
kubelet_pid=$!
exec {ev}<"$work/events"

# next_line SECONDS PATTERN: reads lines until one matches the glob PATTERN; LINE holds it. Every
# line read is kept in EVENTS, the last UPDATE in LAST_UPDATE (for failure messages).
EVENTS=() LAST_UPDATE=none
next_line() {
  local limit=$1 pattern=$2
  while IFS= read -r -t "$limit" -u "$ev" LINE; do
    EVENTS+=("$LINE")
    [[ $LINE == UPDATE* ]] && LAST_UPDATE=$LINE
    # shellcheck disable=SC2053 # PATTERN is a glob on purpose
    [[ $LINE == $pattern ]] && return 0
  done
  LINE=
  return 1
}
# dump_events NAME: what the stand-in said so far, for the log.
dump_events() { local l; for l in "${EVENTS[@]}"; do info "$1" "fake kubelet: $l"; done; }
# health_of ID: the health of device ID in the UPDATE line LINE, in REPLY ("" when absent).
health_of() {
  local tok
  REPLY=
  for tok in ${LINE#* devices=}; do
    [[ $tok == "$1="* ]] && REPLY=${tok#*=}
  done
}
# usec_of KEY: the "KEY=<s>.<us>" stamp of LINE in microseconds, in REPLY.
usec_of() {
  local tok
  for tok in $LINE; do
    [[ $tok == "$1="* ]] && { tok=${tok#*=}; REPLY=$((10#${tok/./})); return 0; }
  done
  REPLY=0
  return 1
}
ms() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
# wait_health STATE SECONDS: the next UPDATE where the unit is STATE.
wait_health() {
  while next_line "$2" 'UPDATE *'; do
    health_of "$unit"
    [[ $REPLY == "$1" ]] && return 0
  done
  return 1
}
plugin_tail() { local l s=; while IFS= read -r l; do s+="$l | "; done <"$work/plugin.log"; REPLY=${s: -600}; }

if ! next_line 30 'READY *'; then
  read -r -d '' err <"$work/fake-kubelet.err"
  fail plugin-health "vfio-gpu-fake-kubelet did not come up on $kdir/kubelet.sock: ${err:-no output}"
  return 0
fi
"$plugin_bin" --config "$work/config.json" >"$work/plugin.log" 2>&1 &
plugin_pid=$!

if ! next_line 30 'REGISTERED *'; then
  plugin_tail
  fail plugin-register "no Register for $res within 30 s; plugin log: $REPLY"
  return 0
fi
pass plugin-register "vfio-gpu-plugin (pid $plugin_pid) registered ${LINE#* resource=}"
if ! wait_health Healthy 20; then
  plugin_tail
  dump_events plugin-health
  fail plugin-health "unit $unit (group $group) never Healthy in ListAndWatch; last update: '$LAST_UPDATE'; plugin log: $REPLY"
  return 0
fi
pass plugin-healthy "unit $unit (group $group, on vfio-pci) Healthy: ${LINE#* devices=}"

# The CDI spec of the resource is written before its devices are advertised.
specs=("$cdi"/*.json)
spec_text=
[[ -f ${specs[0]} ]] && read -r -d '' spec_text <"${specs[0]}"
if [[ $spec_text == *"\"$res\""* && $spec_text == *"\"$unit\""* && $spec_text == *"/dev/vfio/$group\""* ]]; then
  pass plugin-cdi-spec "${specs[0]} names kind $res, device $unit, /dev/vfio/$group"
else
  fail plugin-cdi-spec "no CDI spec in $cdi naming kind $res, device $unit and /dev/vfio/$group (files: ${specs[*]})"
fi

# The unbind: a real uevent. Latency = the stand-in's receive stamp minus the moment the write began
# (both CLOCK_REALTIME in this guest).
t0=$EPOCHREALTIME
echo "$LONE_EDU" >/sys/bus/pci/drivers/vfio-pci/unbind
t1=$EPOCHREALTIME
t0=$((10#${t0/./})) t1=$((10#${t1/./}))
if wait_health Unhealthy 10; then
  usec_of real
  lat=$((REPLY - t0)) after=$((REPLY - t1))
  info plugin-unhealthy "unbind write took $(ms $((t1 - t0))) ms; ListAndWatch update $(ms "$lat") ms after the write began ($(ms "$after") ms after it returned)"
  # Where the time went: the plugin logs the change (UTC, ms) once its rescan decided it, before
  # ListAndWatch sends it. Seconds of the day on both sides (the guest clock is UTC).
  logged=
  while IFS= read -r l; do
    [[ $l == *T??:??:??.???\ *" $unit "*nhealthy* ]] && logged=${l%% *}
  done <"$work/plugin.log"
  if [[ $logged =~ T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})$ ]]; then
    m=("${BASH_REMATCH[@]}")
    logged_us=$((((10#${m[1]} * 60 + 10#${m[2]}) * 60 + 10#${m[3]}) * 1000000 + 10#${m[4]} * 1000))
    info plugin-unhealthy "the plugin logged the change $(ms $((logged_us - t0 % 86400000000))) ms after the write began (ms resolution); the rest is ListAndWatch delivery"
  fi
  if ((lat < 100000)); then
    pass plugin-unhealthy "unit $unit Unhealthy $(ms "$lat") ms after '$LONE_EDU > vfio-pci/unbind' (bar: 100 ms)"
  else
    fail plugin-unhealthy "unit $unit Unhealthy only $(ms "$lat") ms after the unbind write (bar: 100 ms)"
  fi
else
  driver_of "$LONE_EDU"
  dump_events plugin-unhealthy
  fail plugin-unhealthy "unit $unit not Unhealthy within 10 s of unbinding $LONE_EDU (now on '${REPLY:-none}'); last update: '$LAST_UPDATE'"
fi

t0=$EPOCHREALTIME
bind "$LONE_EDU" vfio-pci || { driver_of "$LONE_EDU"; fail plugin-rehealthy "rebind of $LONE_EDU left it on '${REPLY:-none}'"; }
t0=$((10#${t0/./}))
if wait_health Healthy 10; then
  usec_of real
  pass plugin-rehealthy "unit $unit Healthy again $(ms $((REPLY - t0))) ms after the rebind began"
else
  dump_events plugin-rehealthy
  fail plugin-rehealthy "unit $unit not Healthy within 10 s of rebinding $LONE_EDU; last update: '$LAST_UPDATE'"
fi

# One member of a two-device group (the switch's) leaves vfio-pci and is left with no driver (its
# driver_override still says vfio-pci). VFIO's viability rule accepts a driverless member, but Kata
# passes every member of the group to QEMU, which cannot open this one: the unit must go Unhealthy
# (naming the member), and come back by itself when the member is rebound.
sw_unit=$SWITCH_EDU
saved_unit=$unit
unit=$sw_unit
echo "$SWITCH_NIC" >/sys/bus/pci/drivers/vfio-pci/unbind
if wait_health Unhealthy 10; then
  pass plugin-member-unbound "$SWITCH_NIC unbound (no driver): unit $sw_unit Unhealthy"
  reason=
  while IFS= read -r l; do
    [[ $l == *" $sw_unit "*nhealthy* ]] && reason=$l
  done <"$work/plugin.log"
  info plugin-member-unbound "plugin log: ${reason:-<no line>}"
else
  dump_events plugin-member-unbound
  fail plugin-member-unbound "$SWITCH_NIC unbound (no driver): unit $sw_unit not Unhealthy within 10 s; last update: '$LAST_UPDATE'"
fi
bind "$SWITCH_NIC" vfio-pci || { driver_of "$SWITCH_NIC"; fail plugin-member-rebound "rebind of $SWITCH_NIC left it on '${REPLY:-none}'"; }
if wait_health Healthy 10; then
  pass plugin-member-rebound "$SWITCH_NIC back on vfio-pci: unit $sw_unit Healthy again"
else
  dump_events plugin-member-rebound
  fail plugin-member-rebound "unit $sw_unit not Healthy within 10 s of rebinding $SWITCH_NIC; last update: '$LAST_UPDATE'"
fi
unit=$saved_unit

# No restart: the same process, registered once, all along.
regs=${LAST_UPDATE#* registrations=}
regs=${regs%% *}
if [[ -d /proc/$plugin_pid && $regs == 1 ]]; then
  pass plugin-no-restart "pid $plugin_pid alive throughout, 1 registration"
else
  plugin_tail
  fail plugin-no-restart "pid $plugin_pid alive: $([[ -d /proc/$plugin_pid ]] && echo yes || echo no), registrations: '${regs}'; plugin log: $REPLY"
fi
