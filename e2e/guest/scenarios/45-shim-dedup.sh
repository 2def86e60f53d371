# (f) The shim's dedup on the real thing: containerd-shim-vfio-gpu-v2 is started as containerd starts
# a shim, in a bundle whose config.json reaches the same VFIO group three times (/dev/vfio/<N> twice in
# linux.devices, and once more through a cdi.k8s.io annotation naming our CDI kind). Its downstream is
# a Kata stand-in (fake_kata_shim.py) that, like Kata, hot-adds every member of every group it finds
# into a nested QEMU over QMP. Through the shim each BDF is added exactly once, and
# `vfio-gpu audit --sandbox` agrees with the shim's ledger; fed the raw spec, the same stand-in makes
# QEMU refuse the second add ("device is already attached").

if ! project_bin containerd-shim-vfio-gpu-v2; then
  skip shim-dedup "no containerd-shim-vfio-gpu-v2 in ${E2E_BIN:-<no bin dir>} yet"
  return 0
fi
shim_bin=$REPLY
if ! project_bin vfio-gpu; then
  skip shim-dedup "no vfio-gpu in ${E2E_BIN:-<no bin dir>} yet (cdi generate, audit)"
  return 0
fi
cli_bin=$REPLY

res=vfio-gpu.io/pgpu
sandbox=e2e-dedup-sandbox
work=$E2E_WORK/shim
run=$work/run cdi=$work/cdi
mkdir -p "$run" "$cdi" "$work/bundle/rootfs" "$work/raw"
report=$work/kata-adds.log
: >"$report"

# The GPU the shim governs (its selection: NVIDIA, AMD, Intel display classes) and its audio function,
# both on vfio-pci, as a GPU's whole group must be.
for bdf in "$SHIM_GPU" "$SHIM_AUDIO"; do
  bind "$bdf" vfio-pci || { driver_of "$bdf"; fail shim-dedup "$bdf stayed on '${REPLY:-none}', not vfio-pci"; return 0; }
done
group_of "$SHIM_GPU"
group=$REPLY
attr "/sys/class/vfio/$group/dev"
devnum=$REPLY
if [[ $devnum != *:* ]]; then
  fail shim-dedup "no /sys/class/vfio/$group/dev for /dev/vfio/$group"
  return 0
fi

# Our CDI spec for the emulated GPUs (what the plugin writes; the device name is the unit ID, the
# lowest GPU BDF of the group).
read -r -d '' selection <"$E2E_CONFIG"
printf '%s,\n  "resource_name": "%s"\n}\n' "${selection%\}*}" "$res" >"$work/node.json"
if ! out=$("$cli_bin" cdi generate --config "$work/node.json" --output-dir "$cdi" 2>&1); then
  fail shim-dedup "vfio-gpu cdi generate failed: $out"
  return 0
fi
cdi_name=$res=$SHIM_GPU

# The bundle: /dev/vfio/<N> twice, and the same GPU once more through a CDI annotation.
entry="{\"path\": \"/dev/vfio/$group\", \"type\": \"c\", \"major\": ${devnum%:*}, \"minor\": ${devnum#*:}, \"fileMode\": 438, \"uid\": 0, \"gid\": 0}"
printf '%s\n' "{
  \"ociVersion\": \"1.0.2\",
  \"process\": {\"args\": [\"/bin/sh\"], \"cwd\": \"/\", \"user\": {\"uid\": 0, \"gid\": 0}},
  \"root\": {\"path\": \"rootfs\"},
  \"annotations\": {\"cdi.k8s.io/vfio-gpu\": \"$cdi_name\"},
  \"linux\": {\"devices\": [$entry, $entry]}
}" >"$work/bundle/config.json"
cp "$work/bundle/config.json" "$work/raw/config.json"
# A Kata configuration that can pass GPUs through (the shim's runtime hook reads it).
printf '[hypervisor.qemu]\npath = "/usr/bin/qemu-system-x86_64"\ncold_plug_vfio = "root-port"\npcie_root_port = 4\n' >"$work/kata.toml"
printf '%s\n' "{
  \"downstream_shim\": \"$E2E_DIR/fake_kata_shim.py\",
  \"sysfs_root\": \"/sys\", \"dev_root\": \"/dev\", \"run_dir\": \"$run\",
  \"resources\": [\"$res\"], \"cdi_dirs\": [\"$cdi\"], \"authorize\": \"off\",
  \"kata_config_path\": \"$work/kata.toml\"
}" >"$work/shim.json"

nested_pid=
trap 'stop_nested_qemu "$nested_pid"' EXIT
sock=$work/qmp.sock
if ! start_nested_qemu "$sock"; then
  fail shim-dedup "nested QEMU did not start: $REPLY"
  return 0
fi
nested_pid=$NESTED_PID
info shim-dedup "nested QEMU up in ${NESTED_SECS}s, QMP on $sock; group $group = $SHIM_GPU + $SHIM_AUDIO, /dev/vfio/$group is $devnum"

# `start` as containerd runs it: argv, cwd = the bundle, TTRPC_ADDRESS, runtime options on stdin.
export VFIO_GPU_SHIM_CONFIG=$work/shim.json FAKE_KATA_QMP=$sock FAKE_KATA_REPORT=$report FAKE_KATA_CDI_DIR=$cdi
shim_argv=(-namespace k8s.io -address /run/containerd/containerd.sock -publish-binary /usr/bin/containerd -id "$sandbox")
read -r t0 _ </proc/uptime
(cd "$work/bundle" && TTRPC_ADDRESS=/run/containerd/containerd.sock.ttrpc "$shim_bin" "${shim_argv[@]}" start \
  </dev/null >"$work/shim.out" 2>"$work/shim.err")
rc=$?
read -r t1 _ </proc/uptime
read -r -d '' shim_out <"$work/shim.out"
read -r -d '' shim_err <"$work/shim.err"
adds=()
while IFS= read -r line; do adds+=("$line"); done <"$report"
for line in "${adds[@]}"; do info shim-dedup "kata stand-in: $line"; done
if ((rc != 0)); then
  fail shim-start "shim start exited $rc: ${shim_out}${shim_err}"
  return 0
fi
if [[ $shim_out == unix://* && -z $shim_err ]]; then
  pass shim-start "shim start -> Kata stand-in exit 0 in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')s, stdout the stand-in's address ${shim_out%$'\n'}, nothing on stderr"
else
  fail shim-start "stdout '${shim_out%$'\n'}' (want the stand-in's address), stderr '${shim_err%$'\n'}' (want nothing)"
fi

# The rewritten spec: the group once, the redundant annotation gone.
read -r -d '' spec <"$work/bundle/config.json"
rest=$spec count=0
while [[ $rest == *"\"/dev/vfio/$group\""* ]]; do
  rest=${rest#*\"/dev/vfio/"$group"\"}
  count=$((count + 1))
done
if ((count == 1)) && [[ $spec != *"$cdi_name"* ]]; then
  pass shim-spec-dedup "config.json rewritten: /dev/vfio/$group once (was twice + annotation $cdi_name)"
else
  fail shim-spec-dedup "config.json holds /dev/vfio/$group $count times, annotation $cdi_name $([[ $spec == *"$cdi_name"* ]] && echo kept || echo gone)"
fi

# What reached QEMU through the shim: each member once, nothing refused.
ok=0 refused=0
for line in "${adds[@]}"; do
  [[ $line == *" ok" ]] && ok=$((ok + 1))
  [[ $line == *" refused: "* ]] && refused=$((refused + 1))
done
if [[ $ok == 2 && $refused == 0 && ${adds[*]} == *" $SHIM_GPU "* && ${adds[*]} == *" $SHIM_AUDIO "* ]]; then
  pass shim-dedup "through the shim the stand-in issued $ok device_adds ($SHIM_GPU, $SHIM_AUDIO), none refused: no second attach of any BDF"
else
  fail shim-dedup "through the shim: $ok device_adds accepted, $refused refused (want 2 and 0): ${adds[*]}"
fi

claims=()
for f in "$run/ledger/"*; do [[ -f $f ]] && claims+=("${f##*/}"); done
info shim-ledger "claims in $run/ledger: ${claims[*]:-none}"

# The audit: QEMU's view against the ledger's claims for the sandbox.
audit_out=$("$cli_bin" audit --qmp "$sock" --sandbox "$sandbox" --run-dir "$run" --timeout 30 2>&1)
arc=$?
while IFS= read -r line; do info shim-audit "$line"; done <<<"$audit_out"
present=0
while read -r bdf status _; do
  [[ ($bdf == "$SHIM_GPU" || $bdf == "$SHIM_AUDIO") && $status == present ]] && present=$((present + 1))
done <<<"$audit_out"
if ((arc == 0 && present == 2)); then
  pass shim-audit "vfio-gpu audit --sandbox $sandbox: $SHIM_GPU and $SHIM_AUDIO present exactly once, exit 0"
else
  fail shim-audit "vfio-gpu audit exit $arc, $present of 2 BDFs present"
fi

# containerd's delete releases the sandbox's claims.
(cd "$work/bundle" && "$shim_bin" "${shim_argv[@]}" -bundle "$work/bundle" delete </dev/null >/dev/null 2>&1)
left=()
for f in "$run/ledger/"*; do [[ -f $f ]] && left+=("${f##*/}"); done
if ((${#left[@]} == 0 && ${#claims[@]} == 2)); then
  pass shim-release "shim delete released both claims (${claims[*]})"
else
  fail shim-release "claims before delete: ${claims[*]:-none}; after: ${left[*]:-none}"
fi

# Contrast: the raw spec, straight to the stand-in, in a fresh QEMU.
stop_nested_qemu "$nested_pid"
nested_pid=
if ! start_nested_qemu "$sock"; then
  fail shim-contrast "second nested QEMU did not start: $REPLY"
  return 0
fi
nested_pid=$NESTED_PID
: >"$report"
(cd "$work/raw" && "$E2E_DIR/fake_kata_shim.py" "${shim_argv[@]}" start </dev/null >"$work/raw.out" 2>&1)
adds=()
while IFS= read -r line; do adds+=("$line"); done <"$report"
first_refusal=
for line in "${adds[@]}"; do
  [[ -z $first_refusal && $line == *" refused: "* ]] && first_refusal=$line
done
if [[ $first_refusal == *"device is already attached"* ]]; then
  pass shim-contrast "without the shim: ${#adds[@]} adds for one group; QEMU refused the repeat: ${first_refusal#ADD }"
else
  fail shim-contrast "without the shim, no 'device is already attached' among: ${adds[*]}"
fi
