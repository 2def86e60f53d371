// The runtime options containerd writes to a shim's stdin on `start`: a protobuf Any wrapping
// runtimeoptions.v1.Options {type_url = 1, config_path = 2, config_body = 3} for Kata-style
// runtimes, or (containerd >= 2.3) a BootstrapParams whose extensions (field 8, Extension{Any
// value = 1}) carry the same Any. Decoded by hand from the wire format: linking libprotobuf for
// three fields would cost more start-up time than the whole shim may add.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vfio_gpu {

struct RuntimeOptions {
  std::string type_url;     // of the Any
  std::string config_path;  // runtimeoptions.v1.Options.config_path
  std::string config_body;  // TOML blob, used by Kata when config_path is empty
};

// nullopt when the bytes carry no runtimeoptions (empty stdin, runc options, garbage). Never fails
// otherwise: the bytes are passed to the downstream shim unchanged whatever we make of them.
std::optional<RuntimeOptions> DecodeRuntimeOptions(std::string_view bytes);

// Wire-format helpers, for tests.
std::string EncodeRuntimeOptionsAny(const RuntimeOptions& o);
std::string EncodeBootstrapParams(const std::string& instance_id, const std::string& ns,
                                  const RuntimeOptions& o);

}  // namespace vfio_gpu
