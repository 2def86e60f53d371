// The effective Kata configuration of a sandbox: which file Kata will load (runtime options'
// ConfigPath, the shim config's kata_config_path, KATA_CONF_FILE, Kata's search path) and the few
// keys the runtime hook needs from it and from the config.d/ drop-ins beside it. The files are
// read with the project's TOML reader (common/toml.h), which refuses what Kata's own reader
// refuses (a key defined twice), naming the file and line.
#pragma once

#include <string>
#include <vector>

#include "common/toml.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

// Reads `path` plus <dir>/config.d/*.toml in name order (later keys win) into a view.
KataConfigView ReadKataConfig(const std::string& path);
// The same from already-parsed documents, base file first (tests, and a ConfigBody from the
// runtime options).
KataConfigView KataViewFromDocs(const std::string& path, const std::vector<TomlValue>& docs);
// Parses `text` (a whole configuration named `what`) into a view.
KataConfigView KataViewFromText(const std::string& what, std::string_view text);

// The file Kata will load: `config_path` (runtime options, or the shim config), else
// KATA_CONF_FILE (`env`), else the first existing file of Kata's search path.
std::string EffectiveKataConfigPath(const std::string& config_path, const std::string& env);

}  // namespace vfio_gpu
