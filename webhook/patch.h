// The two encodings an AdmissionReview response needs: JSON Pointer escaping for JSONPatch paths
// (RFC 6901) and base64 for the `patch` field.
#pragma once

#include <string>
#include <string_view>

namespace vfio_gpu::webhook {

// "cdi.k8s.io/gpu" -> "cdi.k8s.io~1gpu" ('~' -> "~0", '/' -> "~1").
std::string JsonPointerEscape(std::string_view s);
// Standard alphabet, padded.
std::string Base64Encode(std::string_view data);

}  // namespace vfio_gpu::webhook
