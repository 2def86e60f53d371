// The effective Kata configuration of a sandbox: which file Kata will load (runtime options'
// ConfigPath, the shim config's kata_config_path, KATA_CONF_FILE, Kata's search path) and the few
// keys the runtime hook needs from it and from the config.d/ drop-ins beside it.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "shim-hooks/hooks.h"

namespace vfio_gpu {

// A minimal TOML reader: tables ("[a.b]") and `key = value` lines with string, bool, number or
// array values, comments, multi-line arrays skipped. Values are kept as their unquoted text.
// Enough for Kata's configuration files; not a general TOML parser.
using TomlTable = std::map<std::string, std::string>;  // key -> value text
using TomlDoc = std::map<std::string, TomlTable>;      // table name -> keys
Result<TomlDoc> ParseMiniToml(std::string_view text, const std::string& what);

// Reads `path` plus <dir>/config.d/*.toml in name order (later keys win) into a view.
KataConfigView ReadKataConfig(const std::string& path);
// Same from already-parsed documents (tests).
KataConfigView KataViewFromDocs(const std::string& path, const std::vector<TomlDoc>& docs);

// The file Kata will load: `config_path` (runtime options, or the shim config), else
// KATA_CONF_FILE (`env`), else the first existing file of Kata's search path.
std::string EffectiveKataConfigPath(const std::string& config_path, const std::string& env);

}  // namespace vfio_gpu
