// vfio-gpu-fake-kubelet: the in-process kubelet stand-in (fake_kubelet.h) as a program, for places
// where the plugin runs as a real process next to it (the e2e guest). It serves
// v1beta1.Registration on <dir>/kubelet.sock, accepts the plugin's Register, dials the plugin's
// socket and streams ListAndWatch, exactly as the library does for the unit tests.
//
//   vfio-gpu-fake-kubelet --dir DIR --resource NAME [--resource NAME...]
//
// On stdout, one line per event, flushed at once, timestamps from CLOCK_MONOTONIC and
// CLOCK_REALTIME (seconds, microsecond resolution) so a caller can compute latencies against its
// own clock (bash: $EPOCHREALTIME):
//
//   READY mono=<s> real=<s> socket=<dir>/kubelet.sock
//   REGISTERED mono=<s> real=<s> resource=<name> endpoint=<file> count=<n>
//   UPDATE mono=<s> real=<s> resource=<name> registrations=<n> devices=<n> <ID>=<health>...
//
// An UPDATE is printed for every ListAndWatch message whose device list differs from the last one
// printed for that resource (the stream resends the whole list; identical resends are not news).
// Its time is taken when the kubelet side has stored the message, under its lock, so it is a
// slightly late (conservative) receive time. Runs until SIGTERM or SIGINT, then exits 0; bad usage
// or a socket it cannot serve exits 2 / 1 with one line on stderr.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "test/fakes/fake_kubelet.h"

namespace {

using vfio_gpu::fakes::DeviceList;
using vfio_gpu::fakes::FakeKubelet;

std::mutex out_mu;

std::string Stamp() {
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  char buf[96];
  std::snprintf(buf, sizeof buf, "mono=%lld.%06ld real=%lld.%06ld",
                static_cast<long long>(mono.tv_sec), mono.tv_nsec / 1000,
                static_cast<long long>(real.tv_sec), real.tv_nsec / 1000);
  return buf;
}

void Emit(const std::string& line) {
  std::lock_guard lock(out_mu);
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

// "<n> ID=Health ID=Health..." in the plugin's order.
std::string Describe(const DeviceList& devices) {
  std::string s = std::to_string(devices.size());
  for (const auto& d : devices) s += " " + d.id() + "=" + d.health();
  return s;
}

void Watch(FakeKubelet& kubelet, const std::string& resource, const std::atomic<bool>& stop) {
  constexpr auto kSlice = std::chrono::milliseconds(500);  // how soon a stop is noticed
  int registrations_seen = 0;
  // REGISTERED goes out before the first UPDATE of that registration: the kubelet opens
  // ListAndWatch inside Register, so the stream can deliver before Register has returned.
  auto announce = [&] {
    const int registrations = kubelet.RegistrationCount(resource);
    if (registrations <= registrations_seen) return;
    if (auto req = kubelet.WaitForRegistration(resource, std::chrono::milliseconds(0))) {
      registrations_seen = registrations;
      Emit("REGISTERED " + Stamp() + " resource=" + resource + " endpoint=" + req->endpoint() +
           " count=" + std::to_string(registrations));
    }
  };
  std::optional<std::string> last;
  while (!stop) {
    announce();
    std::string stamp, described;
    auto changed = kubelet.WaitForDevices(
        resource,
        [&](const DeviceList& devices) {
          std::string now = Describe(devices);
          if (last && *last == now) return false;
          stamp = Stamp();  // as soon as the kubelet side holds the new list
          described = std::move(now);
          return true;
        },
        kSlice);
    if (!changed) continue;
    announce();
    last = described;
    Emit("UPDATE " + stamp + " resource=" + resource + " registrations=" +
         std::to_string(kubelet.RegistrationCount(resource)) + " devices=" + described);
  }
}

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "vfio-gpu-fake-kubelet: %s\nusage: vfio-gpu-fake-kubelet --dir DIR --resource NAME "
               "[--resource NAME...]\n",
               why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  std::vector<std::string> resources;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf(
          "usage: vfio-gpu-fake-kubelet --dir DIR --resource NAME [--resource NAME...]\n"
          "Serves the kubelet's Registration on DIR/kubelet.sock, streams ListAndWatch of each\n"
          "registered plugin and prints READY/REGISTERED/UPDATE lines with CLOCK_MONOTONIC and\n"
          "CLOCK_REALTIME stamps. Runs until SIGTERM or SIGINT.\n");
      return 0;
    }
    if ((a == "--dir" || a == "--resource") && i + 1 >= argc) return Usage(a + " needs a value");
    if (a == "--dir") {
      dir = argv[++i];
    } else if (a == "--resource") {
      resources.emplace_back(argv[++i]);
    } else {
      return Usage("unknown argument \"" + a + "\"");
    }
  }
  if (dir.empty() || dir[0] != '/') return Usage("--dir must be an absolute path");
  if (resources.empty()) return Usage("name at least one --resource (e.g. nvidia.com/pgpu)");

  // Every thread (gRPC's included) inherits this mask; only sigwait below takes the signals.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  FakeKubelet kubelet(dir);
  if (auto started = kubelet.Start(); !started) {
    std::fprintf(stderr, "vfio-gpu-fake-kubelet: %s\n", started.error().message().c_str());
    return 1;
  }
  Emit("READY " + Stamp() + " socket=" + kubelet.socket_path());

  std::atomic<bool> stop{false};
  std::vector<std::thread> watchers;
  for (const auto& r : resources)
    watchers.emplace_back([&kubelet, r, &stop] { Watch(kubelet, r, stop); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  stop = true;
  for (auto& t : watchers) t.join();
  kubelet.Stop();
  return 0;
}
