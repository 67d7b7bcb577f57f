// The profile files under profiles/, compiled into the library by cmake/embed_profiles.cmake.
#pragma once

#include <string_view>
#include <vector>

namespace kvtopo::internal {

struct EmbeddedFile {
  std::string_view stem;     // file name without ".json"
  std::string_view content;  // the file's bytes
};

// Every embedded file, sorted by stem.
const std::vector<EmbeddedFile>& EmbeddedProfileFiles();

}  // namespace kvtopo::internal
