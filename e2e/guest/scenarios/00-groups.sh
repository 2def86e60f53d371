# (a) The kernel's own view: the topology run.py built is where topology.env says, and the IOMMU
# groups are the ones the README documents. Lists every group for the log.

if [[ ! -d /sys/kernel/iommu_groups ]] || ! compgen -G '/sys/kernel/iommu_groups/*' >/dev/null; then
  fail iommu-active "no /sys/kernel/iommu_groups/*: is intel_iommu=on on the guest command line?"
  return 0
fi
pass iommu-active "DMA remapping on, IOMMU groups exist"

bad=()
for role in LONE_EDU LONE_NIC LONE_NVME SWITCH_EDU SWITCH_NIC MF_GPU MF_AUDIO NUMA_VGA SHIM_GPU SHIM_AUDIO; do
  bdf=${!role} want=${role}_ID
  pci_id "$bdf"
  [[ $REPLY == "${!want}" ]] || bad+=("$role=$bdf has '${REPLY}' not ${!want}")
done
if ((${#bad[@]})); then fail topology "${bad[*]}"; else pass topology "all 10 endpoints where topology.env puts them"; fi

for g in /sys/kernel/iommu_groups/*; do
  group_members "${g##*/}"
  line=
  for bdf in "${MEMBERS[@]}"; do
    pci_id "$bdf"
    id=$REPLY
    attr "$SYSPCI/$bdf/class"
    line+=" ${bdf}[${id},${REPLY}]"
  done
  info group "${g##*/}:$line"
done

# alone_in_group BDF: the device's group holds nothing else.
alone_in_group() {
  group_of "$1"
  group_members "$REPLY"
  [[ ${#MEMBERS[@]} -eq 1 && ${MEMBERS[0]} == "$1" ]]
}
bad=()
for bdf in "$LONE_EDU" "$LONE_NIC" "$LONE_NVME" "$NUMA_VGA"; do
  alone_in_group "$bdf" || { group_of "$bdf"; bad+=("$bdf shares group $REPLY with ${MEMBERS[*]}"); }
done
if ((${#bad[@]})); then fail groups-root-port "${bad[*]}"; else pass groups-root-port "endpoints behind pcie-root-ports are alone in their groups"; fi

group_of "$SWITCH_EDU"; g1=$REPLY
group_of "$SWITCH_NIC"; g2=$REPLY
group_of "$SWITCH_ROOT_PORT"; g3=$REPLY
group_members "$g1"
if [[ -n $g1 && $g1 == "$g2" && $g1 == "$g3" ]]; then
  pass groups-switch "group $g1 holds the ioh3420 root port, the switch and both endpoints: ${MEMBERS[*]}"
else
  fail groups-switch "switch endpoints in groups '$g1' and '$g2', root port in '$g3'"
fi

group_of "$MF_GPU"; g1=$REPLY
group_of "$MF_AUDIO"; g2=$REPLY
group_members "$g1"
if [[ -n $g1 && $g1 == "$g2" && ${#MEMBERS[@]} -eq 2 ]]; then
  pass groups-multifunction "group $g1 = ${MEMBERS[*]}"
else
  fail groups-multifunction "functions in groups '$g1' and '$g2' (members of '$g1': ${MEMBERS[*]})"
fi

attr "$SYSPCI/$NUMA_VGA/numa_node"
if [[ $REPLY == "$NUMA_VGA_NODE" ]]; then
  pass numa-node "$NUMA_VGA behind pxb-pcie is on node $REPLY"
else
  fail numa-node "$NUMA_VGA numa_node is '$REPLY', want $NUMA_VGA_NODE"
fi
attr "$SYSPCI/$LONE_EDU/numa_node"
info numa-node "$LONE_EDU (pcie.0) numa_node=$REPLY"
