#include "common/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include <vector>

#include "common/strings.h"

namespace vfio_gpu {
namespace {

// %* in a pattern: the message as a JSON string (quoted and escaped), so a message holding quotes,
// paths or newlines still makes one valid JSON line.
class JsonMessageFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string q = Quote(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(q.data(), q.data() + q.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<JsonMessageFlag>();
  }
};

}  // namespace

Result<LogFormat> ParseLogFormat(const std::string& s) {
  if (s == "text") return LogFormat::kText;
  if (s == "json") return LogFormat::kJson;
  return Error("log format \"" + s + "\" is not known; use text or json");
}

Status SetupLogging(LogFormat format, const std::string& file, bool syslog) {
  std::vector<spdlog::sink_ptr> sinks;
  try {
    if (file.empty()) {
      sinks.push_back(std::make_shared<spdlog::sinks::stderr_sink_mt>());
    } else {
      sinks.push_back(std::make_shared<spdlog::sinks::basic_file_sink_mt>(file));
    }
    if (syslog)
      sinks.push_back(
          std::make_shared<spdlog::sinks::syslog_sink_mt>("vfio-gpu", 0, LOG_USER, false));
  } catch (const spdlog::spdlog_ex& e) {
    return Error(std::string("cannot open log ") + file + ": " + e.what());
  }
  auto logger = std::make_shared<spdlog::logger>("vfio-gpu", sinks.begin(), sinks.end());
  if (format == LogFormat::kJson) {
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<JsonMessageFlag>('*').set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","msg":%*})");
    logger->set_formatter(std::move(formatter));
  } else {
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %L %v");
  }
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

void SilenceLogging() {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("null", std::make_shared<spdlog::sinks::null_sink_mt>()));
}

}  // namespace vfio_gpu
