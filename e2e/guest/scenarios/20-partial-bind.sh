# (c) The non-viable case: the multifunction slot's .0 (the "GPU") on vfio-pci while .1 (the "audio"
# function) stays on its real driver. The group node exists, but VFIO refuses the group; the kernel's
# own answer comes from VFIO_GROUP_GET_STATUS, and QEMU's in scenario 30.

group_of "$MF_GPU"
g=$REPLY
if bind "$MF_GPU" vfio-pci; then
  pass partial-bind "$MF_GPU -> vfio-pci"
else
  driver_of "$MF_GPU"
  fail partial-bind "$MF_GPU stayed on '${REPLY:-none}'"
fi
driver_of "$MF_AUDIO"
audio_driver=$REPLY
[[ $audio_driver == e1000e ]] || fail partial-bind "$MF_AUDIO is on '${audio_driver:-none}', want e1000e"
if [[ -c /dev/vfio/$g ]]; then
  pass partial-group-node "/dev/vfio/$g exists for the partially bound group"
else
  fail partial-group-node "no /dev/vfio/$g"
fi

viability "$g"
if ((VIABLE)); then
  fail partial-non-viable "group $g looks viable"
elif [[ $BLOCKER == "$MF_AUDIO (e1000e)" ]]; then
  pass partial-non-viable "group $g is not viable: $BLOCKER"
else
  fail partial-non-viable "group $g blocked by '$BLOCKER', want $MF_AUDIO (e1000e)"
fi

# The kernel agrees (one python for all groups: fork+exec is dear under TCG).
group_of "$LONE_EDU"
python3 "$E2E_DIR/vfio_group_status.py" --name kernel-viability "$REPLY=viable" "$g=not-viable"

scan_agrees scan-after-bind
