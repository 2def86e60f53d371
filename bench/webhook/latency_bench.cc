// Review latency of vfio-gpu-webhook under concurrent clients over loopback HTTPS: the in-process
// server on 127.0.0.1, N client threads each holding a keep-alive TLS connection (as the API server
// does) and posting an AdmissionReview for a GPU pod. Reports p50/p99/max per mode:
//   closed: every client sends its next request as soon as the previous answer arrives (saturation;
//           latency then mostly measures queueing behind the other clients on this machine's cores)
//   paced:  the clients together send --rate requests per second (an API server under a burst of
//           pod creations), which is what admission latency means for a cluster.
// Prints whether the paced p99 of the GPU pod met --target-ms (the issue's 2 ms); the exit status
// is 1 only when requests failed (speed goals are measured here, never asserted by timing).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "common/log.h"
#include "common/strings.h"
#include "webhook/server.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace vfio_gpu;

const char* kGpuPod = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
"uid":"b7f0c3a4-0000-4000-8000-000000000001","kind":{"group":"","version":"v1","kind":"Pod"},
"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"team-a","operation":"CREATE",
"userInfo":{"username":"alice","groups":["team-a","system:authenticated"]},
"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0","namespace":"team-a",
"labels":{"app":"train","job":"llm"},"annotations":{"prometheus.io/scrape":"true"}},
"spec":{"restartPolicy":"Never","containers":[{"name":"train","image":"registry.example/cuda:12",
"command":["python","train.py"],"env":[{"name":"NCCL_DEBUG","value":"INFO"}],
"resources":{"limits":{"nvidia.com/pgpu":"8","nvidia.com/nvswitch":"4","cpu":"96","memory":"1Ti"}},
"volumeMounts":[{"name":"data","mountPath":"/data"}]}],
"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data"}}]}}}})";

struct Options {
  int clients = 100;
  int requests = 100;  // per client per mode
  double rate = 2000;  // paced mode, requests/s over all clients
  double target_ms = 2.0;
};

struct Stats {
  double p50 = 0, p99 = 0, max = 0, rps = 0;
  size_t n = 0, errors = 0;
};

Stats Measure(int port, const std::string& ca, const Options& o, bool paced,
              const std::string& body) {
  std::vector<std::vector<double>> per(o.clients);
  std::atomic<size_t> errors{0};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  // Each client's requests are spaced clients/rate apart, clients staggered across one interval.
  auto interval = std::chrono::duration<double>(o.clients / o.rate);
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::SSLClient cli("localhost", port);
      cli.set_ca_cert_path(ca.c_str());
      cli.enable_server_certificate_verification(true);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);  // as Go's net/http does; Nagle would add ~40 ms per request
      cli.set_read_timeout(10);
      // Connect and warm up before the clock starts.
      if (!cli.Get("/healthz")) errors++;
      ready++;
      while (!go.load()) std::this_thread::yield();
      auto start =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(interval * c / o.clients);
      for (int i = 0; i < o.requests; ++i) {
        if (paced) {
          std::this_thread::sleep_until(start +
                                        std::chrono::duration_cast<Clock::duration>(interval * i));
        }
        auto s = Clock::now();
        auto res = cli.Post("/mutate", body, "application/json");
        double ms = std::chrono::duration<double, std::milli>(Clock::now() - s).count();
        if (!res || res->status != 200) {
          errors++;
          continue;
        }
        per[c].push_back(ms);
      }
    });
  }
  while (ready.load() < o.clients) std::this_thread::yield();
  t0 = Clock::now();
  go = true;
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : per) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  Stats s;
  s.n = all.size();
  s.errors = errors.load();
  if (!all.empty()) {
    s.p50 = all[all.size() / 2];
    s.p99 = all[std::min(all.size() - 1, all.size() * 99 / 100)];
    s.max = all.back();
  }
  s.rps = s.n / secs;
  return s;
}

void Print(const char* pod, const char* mode, const Stats& s) {
  std::printf(
      "%-8s %-7s n=%-6zu errors=%-3zu p50=%7.3f ms  p99=%7.3f ms  max=%7.3f ms  %8.0f req/s\n", pod,
      mode, s.n, s.errors, s.p50, s.p99, s.max, s.rps);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    double v = std::atof(argv[i + 1]);
    if (f == "--clients")
      o.clients = static_cast<int>(v);
    else if (f == "--requests")
      o.requests = static_cast<int>(v);
    else if (f == "--rate")
      o.rate = v;
    else if (f == "--target-ms")
      o.target_ms = v;
    else {
      std::fprintf(stderr, "usage: %s [--clients N] [--requests N] [--rate R] [--target-ms MS]\n",
                   argv[0]);
      return 2;
    }
  }
  SilenceLogging();  // one log line per review would measure the terminal, not the webhook

  char tmpl[] = "/tmp/vfio-gpu-webhook-bench.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  std::string dir = tmpl;
  std::string cmd =
      "cd " + dir +
      " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1"
      " -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1"
      " -keyout tls.key -out tls.crt 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "openssl failed: it must be on PATH\n");
    return 2;
  }

  auto tls = webhook::TlsReloader::Create(dir + "/tls.crt", dir + "/tls.key");
  if (!tls) return std::fprintf(stderr, "%s\n", tls.error().message().c_str()), 2;
  auto server = webhook::Server::Create(webhook::Config{}, std::move(*tls));
  if (!server) return std::fprintf(stderr, "%s\n", server.error().message().c_str()), 2;
  auto port = (*server)->Bind({"127.0.0.1", 0});
  if (!port) return std::fprintf(stderr, "%s\n", port.error().message().c_str()), 2;
  std::thread serve([&] { (void)(*server)->Serve(); });

  std::string gpu = kGpuPod;
  std::string plain = gpu;
  for (const char* r : {"\"nvidia.com/pgpu\":\"8\",\"nvidia.com/nvswitch\":\"4\","}) {
    size_t at = plain.find(r);
    if (at != std::string::npos) plain.erase(at, std::string(r).size());
  }

  std::printf(
      "vfio-gpu-webhook review latency, %d clients over loopback HTTPS (keep-alive), "
      "%u cores\n",
      o.clients, std::thread::hardware_concurrency());
  Stats gpu_paced = Measure(*port, dir + "/tls.crt", o, true, gpu);
  Print("gpu", "paced", gpu_paced);
  Print("non-gpu", "paced", Measure(*port, dir + "/tls.crt", o, true, plain));
  Print("gpu", "closed", Measure(*port, dir + "/tls.crt", o, false, gpu));
  Print("non-gpu", "closed", Measure(*port, dir + "/tls.crt", o, false, plain));
  std::printf("paced rate %.0f req/s; target: gpu paced p99 < %.1f ms: %s\n", o.rate, o.target_ms,
              gpu_paced.p99 < o.target_ms ? "met" : "MISSED");

  (*server)->Stop();
  serve.join();
  std::filesystem::remove_all(dir);
  return gpu_paced.errors == 0 ? 0 : 1;
}
