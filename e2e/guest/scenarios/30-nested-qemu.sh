# (d) A second QEMU inside the guest (TCG, -S, 128M) with four pcie-root-ports and QMP on a unix
# socket: vfio-pci hot-plug of what scenarios 10/20 bound, with QEMU's exact refusals recorded.

sock=$E2E_WORK/nested-qmp.sock
log=$E2E_WORK/nested-qemu.log
rm -f "$sock"
read -r t0 _ </proc/uptime
qemu-system-x86_64 -S -accel tcg -machine q35 -nodefaults -display none -m 128M \
  -device pcie-root-port,id=rp0,chassis=1,addr=0x2 -device pcie-root-port,id=rp1,chassis=2,addr=0x3 \
  -device pcie-root-port,id=rp2,chassis=3,addr=0x4 -device pcie-root-port,id=rp3,chassis=4,addr=0x5 \
  -qmp "unix:$sock,server=on,wait=off" -daemonize -pidfile "$E2E_WORK/nested-qemu.pid" >"$log" 2>&1
rc=$?
if ((rc != 0)); then
  fail nested-qemu-start "qemu-system-x86_64 exited $rc: $(tr '\n' ' ' <"$log")"
  return 0
fi
read -r t1 _ </proc/uptime
pass nested-qemu-start "nested QEMU up (-S, TCG, 128M) in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')s, QMP on $sock"

audit=()
project_bin vfio-gpu && audit=(--audit-bin "$REPLY")
python3 "$E2E_DIR/qmp_scenario.py" --sock "$sock" --good "$LONE_EDU" --non-viable "$MF_GPU" \
  --not-vfio "$LONE_NVME" --shared "$SWITCH_EDU" "${audit[@]}"

# qmp_scenario ends with `quit`; make sure, and don't leave a QEMU behind if it didn't get there.
read -r pid 2>/dev/null <"$E2E_WORK/nested-qemu.pid"
for ((i = 0; i < 50; i++)); do
  [[ -n $pid && -d /proc/$pid ]] || break
  nap 0.1
done
[[ -n $pid && -d /proc/$pid ]] && { kill -9 "$pid"; info nested-qemu "had to kill QEMU $pid"; }
[[ -s $log ]] && info nested-qemu "stderr: $(tr '\n' ' ' <"$log")"
