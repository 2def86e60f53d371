// vfio-gpu-shim-podresources --socket PATH --namespace NS --name POD [--timeout-ms N]
// The shim's pod resources client: prints the pod's devices as one JSON line on stdout. Exit 0 ok,
// 1 kubelet unavailable (transient), 2 other errors (message on stderr).
#include <cstdio>
#include <string>

#include "common/strings.h"
#include "shim-hooks/pod_resources_client.h"

int main(int argc, char** argv) {
  std::string socket, ns, name;
  int timeout_ms = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--socket")
      socket = value;
    else if (flag == "--namespace")
      ns = value;
    else if (flag == "--name")
      name = value;
    else if (flag == "--timeout-ms")
      timeout_ms = static_cast<int>(vfio_gpu::ParseInt(value).value_or(2000));
  }
  if (socket.empty() || ns.empty() || name.empty()) {
    std::fprintf(stderr,
                 "usage: vfio-gpu-shim-podresources --socket PATH --namespace NS --name POD "
                 "[--timeout-ms N]\n");
    return 2;
  }
  std::string out, err;
  int rc = vfio_gpu::QueryPodResourcesJson(socket, ns, name, timeout_ms, out, err);
  if (rc == 0)
    std::printf("%s\n", out.c_str());
  else
    std::fprintf(stderr, "%s\n", err.c_str());
  return rc;
}
