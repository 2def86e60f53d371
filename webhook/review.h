// The webhook's decision as a pure function: AdmissionReview text in, response out. No I/O, no
// clock, no logging, so every rule is unit-tested without a server and the server stays a thin
// shell.
#pragma once

#include <string>
#include <string_view>

#include "webhook/config.h"

namespace vfio_gpu::webhook {

enum class Outcome {
  kAllowed,  // passed unchanged (not a GPU pod, or already on an allowed class)
  kPatched,  // allowed with a JSONPatch (runtimeClassName set and/or annotations stripped)
  kDenied,   // refused with a message
  kInvalid,  // not a usable AdmissionReview: HTTP 400
};

const char* OutcomeName(Outcome o);

struct Decision {
  Outcome outcome = Outcome::kInvalid;
  int http_status = 400;
  std::string body;          // AdmissionReview JSON (200) or a plain-text error (400)
  std::string content_type;  // "application/json" or "text/plain"
  std::string pod;           // "namespace/name" when known, for the log line
  std::string reason;        // why, one line, for the log line
};

// Bodies larger than this are refused before parsing (the server enforces it while reading too).
inline constexpr size_t kMaxReviewBytes = 3 * 1024 * 1024;

Decision Review(const Config& config, std::string_view body);

}  // namespace vfio_gpu::webhook
