// containerd-shim-vfio-gpu-v2: containerd's shim for GPU sandboxes, in front of Kata's.
#include "shim-hooks/wrapper.h"

int main(int argc, char** argv) {
  return vfio_gpu::ShimMain(argc, argv);
}
