// vfio-gpu-e2e-qmp: one QMP command through our own client (qmp/qmp_session.h), for the e2e guest's
// nested-QEMU scenario, so the hot-plug exchange there is ours and not a stand-in's. A test tool,
// not an operator's command: operators have `vfio-gpu audit`.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "common/json.h"
#include "common/log.h"
#include "common/strings.h"
#include "qmp/qmp_session.h"

namespace {

constexpr const char* kUsage =
    R"(usage: vfio-gpu-e2e-qmp --socket PATH --execute COMMAND [--args JSON] [--timeout SECONDS]

Connects to the QMP socket PATH, reads the greeting, negotiates capabilities, sends COMMAND with
the arguments JSON (an object), and closes the socket.

  stdout  QEMU's `return` value as one line of JSON, or its error `desc`, verbatim
  exit    0 QEMU returned, 1 QEMU answered an error, 2 bad usage,
          3 no answer (no socket, busy, timeout, not QMP: the reason on stderr)

--timeout (default 5, 1 to 600 seconds) bounds the greeting and capabilities, then the command.
)";

constexpr int kExitReturned = 0;
constexpr int kExitRefused = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoAnswer = 3;
constexpr int kDefaultTimeoutSeconds = 5;

int Usage(const std::string& message) {
  std::fprintf(stderr, "vfio-gpu-e2e-qmp: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vfio_gpu;
  (void)SetupLogging(LogFormat::kText);  // stderr: stdout carries QEMU's answer only
  spdlog::set_level(spdlog::level::warn);
  cli::Args args(std::vector<std::string>(argv + 1, argv + argc));
  if (args.Flag("help")) {
    std::fputs(kUsage, stdout);
    return kExitReturned;
  }
  auto socket = args.Value("socket");
  auto command = args.Value("execute");
  auto args_text = args.Value("args");
  auto timeout_text = args.Value("timeout");
  if (auto bad = args.Leftover()) return Usage(*bad);
  if (!socket || !command || command->empty()) return Usage("--socket and --execute are required");

  Json arguments;  // null: the command goes without "arguments"
  if (args_text) {
    auto parsed = Json::Parse(*args_text, "--args");
    if (!parsed) return Usage(parsed.error().message());
    if (!parsed->is_object()) return Usage("--args must be a JSON object, not " + *args_text);
    arguments = std::move(*parsed);
  }
  int timeout_s = kDefaultTimeoutSeconds;
  if (timeout_text) {
    auto t = ParseInt(*timeout_text);
    if (!t || *t < 1 || *t > 600)
      return Usage("--timeout \"" + *timeout_text + "\" must be 1 to 600 seconds");
    timeout_s = static_cast<int>(*t);
  }

  auto session = qmp::QmpSession::Connect(*socket, std::chrono::seconds(timeout_s));
  if (!session) {
    std::fprintf(stderr, "vfio-gpu-e2e-qmp: %s\n", session.error().message().c_str());
    return kExitNoAnswer;
  }
  auto reply = session->Call(*command, arguments);
  session->Close();  // one client at a time: free the socket before printing
  if (!reply) {
    std::fprintf(stderr, "vfio-gpu-e2e-qmp: %s\n", reply.error().message().c_str());
    return kExitNoAnswer;
  }
  if (reply->ok) {
    std::printf("%s\n", reply->value.Dump().c_str());
    return kExitReturned;
  }
  std::printf("%s\n", reply->error_desc.c_str());
  return kExitRefused;
}
