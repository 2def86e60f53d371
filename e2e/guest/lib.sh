# Helpers for the guest-side scenarios (sourced; bash). Under TCG every fork+exec costs ~50-100 ms, so
# these read sysfs with builtins only: `read` for attributes, `cd -P` to resolve symlinks.
# Results go to stdout, which init points at the results serial port:
#   E2E-RESULT <name> PASS|FAIL|SKIP <detail>     one per check; the host counts these
#   E2E-INFO <name> <text>                        facts worth keeping in the log (groups, messages)

SYSPCI=/sys/bus/pci/devices

pass() { local n=$1; shift; echo "E2E-RESULT $n PASS $*"; }
fail() { local n=$1; shift; echo "E2E-RESULT $n FAIL $*"; }
skip() { local n=$1; shift; echo "E2E-RESULT $n SKIP $*"; }
info() { local n=$1; shift; echo "E2E-INFO $n $*"; }
# check NAME DETAIL -- CMD...: PASS when CMD succeeds, FAIL otherwise.
check() {
  local n=$1 detail=$2
  shift 3
  if "$@"; then pass "$n" "$detail"; else fail "$n" "$detail"; fi
}

# attr FILE: the first line of FILE in REPLY ("" when unreadable).
attr() { REPLY=; read -r REPLY 2>/dev/null <"$1" || [[ -n $REPLY ]]; }

# link_name PATH: basename of the symlink's target in REPLY ("" when there is no such link).
link_name() {
  REPLY=
  [[ -L $1 ]] || return 1
  local here=$PWD
  cd -P "$1" 2>/dev/null || return 1
  REPLY=${PWD##*/}
  cd "$here" || return 1
}

driver_of() { link_name "$SYSPCI/$1/driver" || true; }       # REPLY = driver or ""
group_of() { link_name "$SYSPCI/$1/iommu_group" || true; }   # REPLY = group number or ""
pci_id() { local v; attr "$SYSPCI/$1/vendor"; v=$REPLY; attr "$SYSPCI/$1/device"; REPLY=$v:$REPLY; }

# group_members N: the BDFs of /sys/kernel/iommu_groups/N/devices in the array MEMBERS.
group_members() {
  MEMBERS=()
  local d
  for d in /sys/kernel/iommu_groups/"$1"/devices/*; do
    [[ -e $d ]] && MEMBERS+=("${d##*/}")
  done
}

# bind BDF DRIVER: the binding sequence without udev: driver_override first, then unbind from the
# current driver, then ask the PCI core to probe. DRIVER "" clears the override and lets any driver
# (or none) take the device. Succeeds when the device ends up on DRIVER.
bind() {
  local bdf=$1 want=$2 dev=$SYSPCI/$1
  echo "$want" >"$dev/driver_override" || return 1
  driver_of "$bdf"
  if [[ -n $REPLY && $REPLY != "$want" ]]; then
    echo "$bdf" >"$dev/driver/unbind" || return 1
  fi
  driver_of "$bdf"
  [[ -n $REPLY ]] || echo "$bdf" >/sys/bus/pci/drivers_probe 2>/dev/null
  driver_of "$bdf"
  [[ $REPLY == "$want" ]]
}

# viability N: the kernel's VFIO rule for group N. Sets VIABLE=1|0 and BLOCKER to the first member
# that makes it non-viable, as "BDF (driver)". Bridges and ports (class 0x0604xx) don't count.
# shellcheck disable=SC2034 # VIABLE and BLOCKER are this function's results
viability() {
  local bdf
  VIABLE=1 BLOCKER=
  group_members "$1"
  for bdf in "${MEMBERS[@]}"; do
    attr "$SYSPCI/$bdf/class"
    [[ $REPLY == 0x0604* ]] && continue
    driver_of "$bdf"
    case $REPLY in
    "" | vfio-pci | pci-stub) ;;
    *) VIABLE=0 BLOCKER="$bdf ($REPLY)"; return 0 ;;
    esac
  done
}

# load_module NAME: modprobe from the shared root (the host's /lib/modules is the booted kernel's).
load_module() { modprobe "$1" 2>&1; }

# project_bin NAME: the path of one of our binaries in REPLY, or fail when the build dir lacks it.
project_bin() {
  REPLY=
  [[ -n $E2E_BIN && -x $E2E_BIN/$1 ]] || return 1
  REPLY=$E2E_BIN/$1
}

# nap SECONDS: sleep without a fork (a read with a timeout on a pipe nobody writes to).
nap() {
  [[ -n ${NAP_FD:-} ]] || exec {NAP_FD}<> <(:)
  read -r -t "$1" -u "$NAP_FD" _ || true
}

# wait_driver BDF DRIVER [SECONDS]: waits until BDF is bound to DRIVER ("" = unbound); some drivers
# (nvme) probe asynchronously.
wait_driver() {
  local i limit=$(((${3:-5}) * 10))
  for ((i = 0; i <= limit; i++)); do
    driver_of "$1"
    [[ $REPLY == "$2" ]] && return 0
    nap 0.1
  done
  return 1
}

# scan_agrees NAME: runs `vfio-gpu scan --json --config $E2E_CONFIG` and compares it with the kernel's
# own view (check_scan.py); SKIP until the binary exists.
scan_agrees() {
  if project_bin vfio-gpu; then
    python3 "$E2E_DIR/check_scan.py" --bin "$REPLY" --config "$E2E_CONFIG" --name "$1"
  else
    skip "$1" "no vfio-gpu in ${E2E_BIN:-<no bin dir>} yet"
  fi
}

# start_nested_qemu SOCK: a second QEMU like scenario 30's (-S, TCG, q35, 128M, pcie-root-ports
# rp0..rp3, QMP on SOCK), daemonized. Sets NESTED_PID and NESTED_SECS (start time); its stderr goes to
# SOCK's name with .log. Fails with that log in REPLY.
# shellcheck disable=SC2034 # NESTED_PID and NESTED_SECS are this function's results
start_nested_qemu() {
  local sock=$1 base=${1%.sock} t0 t1
  NESTED_PID='' NESTED_SECS=''
  rm -f "$sock" "$base.pid"
  read -r t0 _ </proc/uptime
  if ! qemu-system-x86_64 -S -accel tcg -machine q35 -nodefaults -display none -m 128M \
    -device pcie-root-port,id=rp0,chassis=1,addr=0x2 -device pcie-root-port,id=rp1,chassis=2,addr=0x3 \
    -device pcie-root-port,id=rp2,chassis=3,addr=0x4 -device pcie-root-port,id=rp3,chassis=4,addr=0x5 \
    -qmp "unix:$sock,server=on,wait=off" -daemonize -pidfile "$base.pid" >"$base.log" 2>&1; then
    read -r -d '' REPLY <"$base.log"
    return 1
  fi
  read -r t1 _ </proc/uptime
  read -r NESTED_PID <"$base.pid"
  NESTED_SECS=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')
}

# stop_nested_qemu PID: SIGTERM (QEMU exits cleanly and releases its VFIO groups), SIGKILL after 5 s.
stop_nested_qemu() {
  local i
  [[ -n $1 ]] || return 0
  kill "$1" 2>/dev/null
  for ((i = 0; i < 50; i++)); do
    [[ -d /proc/$1 ]] || return 0
    nap 0.1
  done
  kill -9 "$1" 2>/dev/null
}
