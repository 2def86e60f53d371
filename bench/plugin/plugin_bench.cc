// Measures the vfio-gpu-plugin binary on an 8-GPU HGX-like fake tree against the in-process fake
// kubelet (the same kind of harness the bar was measured with):
//   Allocate round trip p50/p99 (target p99 <= 0.35 ms; bar: p50 0.25 ms, p99 0.7 ms)
//   host change -> ListAndWatch update (target < 100 ms)
//   resident memory at idle (target <= 12 MB; bar 16 MB) and wake-ups at idle.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hostmodel/fake_host.h"
#include "test/fakes/fake_kubelet.h"

using namespace vfio_gpu;
using Clock = std::chrono::steady_clock;

namespace {

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

long StatusField(pid_t pid, const std::string& key) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::atol(line.c_str() + key.size() + 1);
  return -1;
}

// Context switches of every thread of `pid`: each is a wake-up. `per` gets "name:count" per thread.
long Wakeups(pid_t pid, std::map<std::string, long>* per = nullptr) {
  long sum = 0;
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream f(t.path() / "status");
    std::string line, name;
    long n = 0;
    while (std::getline(f, line)) {
      if (line.rfind("Name:", 0) == 0) name = line.substr(6);
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
          line.rfind("nonvoluntary_ctxt_switches:", 0) == 0)
        n += std::atol(line.c_str() + line.find(':') + 1);
    }
    sum += n;
    if (per) (*per)[t.path().filename().string() + "/" + name] = n;
  }
  return sum;
}

long CpuTicks(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), {});
  auto p = s.rfind(')');
  std::vector<std::string> fields;
  std::string cur;
  for (size_t i = p + 2; i < s.size(); ++i) {
    if (s[i] == ' ') {
      fields.push_back(cur);
      cur.clear();
    } else {
      cur += s[i];
    }
  }
  return std::atol(fields[11].c_str()) + std::atol(fields[12].c_str());  // utime + stime
}

}  // namespace

int main(int argc, char** argv) {
  int calls = argc > 1 ? std::atoi(argv[1]) : 5000;
  char tmpl[] = "/tmp/vfio-gpu-bench.XXXXXX";
  std::string root = mkdtemp(tmpl);
  FakeHost host(root + "/host");
  if (!BuildHgxHost(host)) return 1;
  std::string kdir = root + "/kubelet";
  fakes::FakeKubelet kubelet(kdir);
  if (!kubelet.Start()) return 1;
  const std::string res = "nvidia.com/pgpu";

  pid_t pid = fork();
  if (pid == 0) {
    execl(VFIO_GPU_PLUGIN_BIN, "vfio-gpu-plugin", "--sysfs-root", host.roots().sysfs.c_str(),
          "--dev-root", host.roots().dev.c_str(), "--kubelet-dir", kdir.c_str(), "--cdi-dir",
          (root + "/cdi").c_str(), "--run-dir", (root + "/run").c_str(), "--metrics-address", "",
          "--log-format", "json", static_cast<char*>(nullptr));
    _exit(127);
  }
  auto all8 = kubelet.WaitForDevices(
      res, [](const fakes::DeviceList& l) { return l.size() == 8; }, std::chrono::seconds(10));
  if (!all8) {
    std::fprintf(stderr, "plugin did not register\n");
    kill(pid, SIGTERM);
    return 1;
  }
  std::vector<std::string> ids;
  for (const auto& d : *all8) ids.push_back(d.id());

  // Allocate round trip over the unix socket.
  std::vector<double> us;
  v1beta1::AllocateResponse resp;
  for (int i = 0; i < calls + 200; ++i) {
    auto t0 = Clock::now();
    // No deadline, as the kubelet calls Allocate.
    auto s = kubelet.Allocate(res, {ids[static_cast<size_t>(i) % ids.size()]}, &resp,
                              std::chrono::milliseconds(0));
    double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (!s.ok()) {
      std::fprintf(stderr, "Allocate failed: %s\n", s.error_message().c_str());
      break;
    }
    if (i >= 200) us.push_back(d);  // warm-up excluded
  }
  std::printf(
      "Allocate round trip (%zu calls): p50 %.3f ms  p99 %.3f ms  (target p99 <= 0.35 ms)\n",
      us.size(), Pct(us, 0.5) / 1000, Pct(us, 0.99) / 1000);

  // Host change (group node removed / back, seen by inotify) -> ListAndWatch update.
  std::vector<double> ms;
  const std::string& id = ids.front();
  for (int i = 0; i < 20; ++i) {
    for (const char* want : {"Unhealthy", "Healthy"}) {
      auto t0 = Clock::now();
      if (std::string(want) == "Unhealthy")
        (void)host.RemoveGroupNode(104);
      else
        (void)host.AddGroupNode(104);
      auto l = kubelet.WaitForDevices(
          res,
          [&](const fakes::DeviceList& list) {
            for (const auto& d : list)
              if (d.id() == id) return d.health() == want;
            return false;
          },
          std::chrono::seconds(5));
      if (l) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  }
  std::printf(
      "host change -> ListAndWatch (%zu changes): p50 %.2f ms  max %.2f ms  (target < 100 ms)\n",
      ms.size(), Pct(ms, 0.5), *std::max_element(ms.begin(), ms.end()));

  // Idle: resident memory and wake-ups over a quiet window (the reconcile is 30 s away).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  std::map<std::string, long> per0, per1;
  long w0 = Wakeups(pid, &per0), c0 = CpuTicks(pid);
  std::this_thread::sleep_for(std::chrono::seconds(5));
  long w1 = Wakeups(pid, &per1), c1 = CpuTicks(pid);
  for (const auto& [t, n] : per1)
    if (n != per0[t]) std::printf("  thread %s woke %ld times\n", t.c_str(), n - per0[t]);
  std::printf(
      "idle, 8 GPU units (+4 NVSwitch units): VmRSS %.1f MB (VmHWM %.1f MB; target <= 12 MB), "
      "%ld wake-ups and %ld CPU ticks in 5 s, %ld threads\n",
      static_cast<double>(StatusField(pid, "VmRSS")) / 1024,
      static_cast<double>(StatusField(pid, "VmHWM")) / 1024, w1 - w0, c1 - c0,
      StatusField(pid, "Threads"));
  std::printf(
      "  of which anonymous %.1f MB, file-backed (shared libraries: gRPC, protobuf, abseil) %.1f "
      "MB\n",
      static_cast<double>(StatusField(pid, "RssAnon")) / 1024,
      static_cast<double>(StatusField(pid, "RssFile")) / 1024);

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  kubelet.Stop();
  std::filesystem::remove_all(root);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
