# Real drivers take what they claim, as on a host before vfio-gpu runs: e1000e takes the three NICs
# (one of them the multifunction slot's "audio" function), nvme the NVMe controller. edu and VGA have
# no driver loaded and stay unbound. Then `vfio-gpu scan` must agree with the kernel.

out=$(load_module e1000e; load_module nvme) || true
[[ -z $out ]] || info host-drivers "modprobe: $out"
bad=()
for bdf in "$LONE_NIC" "$SWITCH_NIC" "$MF_AUDIO"; do
  wait_driver "$bdf" e1000e 5 || bad+=("$bdf on '${REPLY}' not e1000e")
done
wait_driver "$LONE_NVME" nvme 10 || bad+=("$LONE_NVME on '${REPLY}' not nvme")
for bdf in "$LONE_EDU" "$SWITCH_EDU" "$MF_GPU" "$NUMA_VGA"; do
  driver_of "$bdf"
  [[ -z $REPLY ]] || bad+=("$bdf unexpectedly on $REPLY")
done
if ((${#bad[@]})); then fail host-drivers "${bad[*]}"; else pass host-drivers "NICs on e1000e, NVMe on nvme, the rest unbound"; fi

scan_agrees scan-host-drivers
