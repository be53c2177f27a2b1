// Flag helpers shared by the tools: a flag is bound to the field of the configuration struct it
// sets, so its default is the struct's and is stated nowhere else.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "common/units.h"

namespace yb::tools {

// A size flag ("4 GB", "16MB", "1048576") that sets `target`; its help shows target's value now.
inline CLI::Option* AddSizeOption(CLI::App& app, const std::string& name, uint64_t& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&target, name](const std::string& text) {
            auto size = ParseSize(text);
            if (!size.ok()) throw CLI::ValidationError(name, size.status().message());
            target = *size;
          },
          help)
      ->default_str(FormatBytes(target));
}

}  // namespace yb::tools
