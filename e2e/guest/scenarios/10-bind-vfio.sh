# (b) Binding to vfio-pci the way vfio-gpu does it, without udev: driver_override, unbind, probe.
# Group nodes /dev/vfio/<N> appear when a group's first member binds to vfio-pci.

# bind_and_check NAME DETAIL BDF...: binds each BDF to vfio-pci, then checks driver and group node.
bind_and_check() {
  local n=$1 what=$2 bdf g bad=()
  shift 2
  for bdf in "$@"; do
    driver_of "$bdf"
    local before=${REPLY:-none}
    bind "$bdf" vfio-pci || { driver_of "$bdf"; bad+=("$bdf stayed on '${REPLY:-none}'"); continue; }
    group_of "$bdf"
    g=$REPLY
    [[ -c /dev/vfio/$g ]] || bad+=("no /dev/vfio/$g for $bdf")
    info "$n" "$bdf: $before -> vfio-pci, group $g, /dev/vfio/$g"
  done
  if ((${#bad[@]})); then fail "$n" "${bad[*]}"; else pass "$n" "$what"; fi
}

if [[ -c /dev/vfio/vfio ]]; then pass vfio-container "/dev/vfio/vfio present"; else fail vfio-container "no /dev/vfio/vfio: is the vfio module loaded?"; fi
bind_and_check bind-unbound "$LONE_EDU (no driver) -> vfio-pci" "$LONE_EDU"
bind_and_check bind-from-driver "$LONE_NIC (e1000e) -> vfio-pci" "$LONE_NIC"
bind_and_check bind-shared-group "$SWITCH_EDU and $SWITCH_NIC (the switch's group) -> vfio-pci" "$SWITCH_EDU" "$SWITCH_NIC"

for bdf in "$LONE_EDU" "$SWITCH_EDU"; do
  group_of "$bdf"
  g=$REPLY
  viability "$g"
  if ((VIABLE)); then pass "viable-$bdf" "group $g viable"; else fail "viable-$bdf" "group $g blocked by $BLOCKER"; fi
done

# On 6.1 every vfio-pci device has vfio-dev/vfioN; it is a cdev only when vfio-dev/vfioN/dev exists.
for d in "$SYSPCI/$LONE_EDU"/vfio-dev/vfio*; do
  if [[ -e $d/dev ]]; then info cdev "$LONE_EDU ${d##*/} is a cdev (/dev/vfio/devices/${d##*/})"; else info cdev "$LONE_EDU ${d##*/}: no cdev (kernel without iommufd cdevs)"; fi
done
