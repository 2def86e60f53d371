#include "common/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/syslog_sink.h>

#include <vector>

namespace vfio_gpu {

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
    // The message itself is JSON-escaped by the callers that put structured data in it; spdlog's %v
    // is placed inside a JSON string here, so callers must not log raw double quotes.
    logger->set_pattern(
        R"({"time":"%Y-%m-%dT%H:%M:%S.%e%z","level":"%l","component":"%n","msg":"%v"})");
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
