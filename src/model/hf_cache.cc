#include "model/hf_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <system_error>

#include "internal/ascii_case.h"
#include "internal/text_file.h"

namespace kvtopo::internal {
namespace {

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsRepoIdPart(std::string_view part) {
  if (part.empty() || !IsWordChar(part.front()) || !IsWordChar(part.back())) return false;
  for (const char c : part) {
    if (!IsWordChar(c) && c != '-' && c != '.') return false;
  }
  return true;
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// Python's os.path.expanduser for "~" and "~/...": $HOME (other users' homes are left as given).
std::string ExpandUser(const std::string& path) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) return path;
  const char* home = std::getenv("HOME");
  if (home == nullptr) return path;
  return std::string(home) + path.substr(1);
}

// Python's posixpath.expandvars: $NAME and ${NAME} replaced when NAME is set, kept as written
// otherwise.
std::string ExpandVars(const std::string& path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] != '$') {
      out += path[i++];
      continue;
    }
    size_t end = i + 1;
    std::string name;
    if (end < path.size() && path[end] == '{') {
      const size_t close = path.find('}', end + 1);
      if (close == std::string::npos) {
        out += path.substr(i);
        break;
      }
      name = path.substr(end + 1, close - end - 1);
      end = close + 1;
    } else {
      while (end < path.size() && IsWordChar(path[end])) ++end;
      name = path.substr(i + 1, end - i - 1);
    }
    const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
    out += value != nullptr ? std::string(value) : path.substr(i, end - i);
    i = end;
  }
  return out;
}

// A revision names a file under refs/ and a folder under snapshots/: a relative name without
// "." or ".." components.
bool IsRevisionName(const std::string& revision) {
  if (revision.empty() || revision.front() == '/' || revision.find('\0') != std::string::npos) {
    return false;
  }
  size_t start = 0;
  while (start <= revision.size()) {
    const size_t slash = std::min(revision.find('/', start), revision.size());
    const std::string_view part(revision.data() + start, slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = slash + 1;
  }
  return true;
}

// gguf's GGMLQuantizationType names (gguf-py 0.17, the engine's minimum).
constexpr std::array<std::string_view, 32> kGgmlTypes = {
    "F32",     "F16",   "Q4_0",   "Q4_1",  "Q5_0",  "Q5_1",   "Q8_0",    "Q8_1",
    "Q2_K",    "Q3_K",  "Q4_K",   "Q5_K",  "Q6_K",  "Q8_K",   "IQ2_XXS", "IQ2_XS",
    "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS", "I8",      "I16",
    "I32",     "I64",   "F64",    "IQ1_M", "BF16",  "TQ1_0",  "TQ2_0",   "MXFP4"};

bool IsGgmlType(std::string_view name) {
  return std::find(kGgmlTypes.begin(), kGgmlTypes.end(), name) != kGgmlTypes.end();
}

// gguf_utils.is_valid_gguf_quant_type: a type, or a type with a size suffix.
bool IsGgufQuantType(std::string_view quant) {
  if (IsGgmlType(quant)) return true;
  for (const std::string_view suffix : {"_M", "_S", "_L", "_XL", "_XS", "_XXS"}) {
    if (quant.size() > suffix.size() && quant.ends_with(suffix) &&
        IsGgmlType(quant.substr(0, quant.size() - suffix.size()))) {
      return true;
    }
  }
  return false;
}

bool IsRemoteGgufPart(std::string_view part) {
  if (part.empty() || !std::isalnum(static_cast<unsigned char>(part.front()))) return false;
  for (const char c : part) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

}  // namespace

bool SplitRemoteGguf(std::string_view model, std::string& repo, std::string& quant) {
  const size_t colon = model.rfind(':');
  const size_t slash = model.find('/');
  if (colon == std::string_view::npos || slash == std::string_view::npos || slash > colon) {
    return false;
  }
  const std::string_view q = model.substr(colon + 1);
  if (!IsRemoteGgufPart(model.substr(0, slash)) ||
      !IsRemoteGgufPart(model.substr(slash + 1, colon - slash - 1)) || q.empty()) {
    return false;
  }
  for (const char c : q) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '+' && c != '-') {
      return false;
    }
  }
  const size_t dash = q.rfind('-');
  if (!IsGgufQuantType(q) &&
      (dash == std::string_view::npos || !IsGgufQuantType(q.substr(dash + 1)))) {
    return false;
  }
  repo = std::string(model.substr(0, colon));
  quant = std::string(q);
  return true;
}

bool EngineUsesModelScope() { return AsciiLower(Env("VLLM_USE_MODELSCOPE")) == "true"; }

bool IsHfRepoId(std::string_view model) {
  if (model.empty() || model.size() > 96 || model.find("--") != std::string_view::npos ||
      model.find("..") != std::string_view::npos) {
    return false;
  }
  const size_t slash = model.find('/');
  if (slash == std::string_view::npos) return IsRepoIdPart(model);
  return IsRepoIdPart(model.substr(0, slash)) && IsRepoIdPart(model.substr(slash + 1));
}

std::filesystem::path HfHubCacheDir() {
  std::string hub = Env("HF_HUB_CACHE");
  if (hub.empty()) hub = Env("HUGGINGFACE_HUB_CACHE");
  if (hub.empty()) {
    std::string home = Env("HF_HOME");
    if (home.empty()) {
      std::string xdg = Env("XDG_CACHE_HOME");
      home = (xdg.empty() ? std::string("~/.cache") : xdg) + "/huggingface";
    }
    hub = ExpandVars(ExpandUser(home)) + "/hub";
  }
  return std::filesystem::path(ExpandVars(ExpandUser(hub)));
}

Result<std::optional<HfSnapshot>> FindHfSnapshot(const std::string& repo_id,
                                                 const std::string& revision, std::string_view knob,
                                                 std::string& why) {
  const std::string asked = revision.empty() ? "main" : revision;
  if (EngineUsesModelScope()) {
    return NotFound(fmt::format(
        "model '{}': VLLM_USE_MODELSCOPE is true, so the engine fetches the repo from "
        "ModelScope's hub, whose cache kvtopo does not read; pass the model's directory (or "
        "unset the variable to read the Hugging Face cache)",
        repo_id));
  }
  if (!IsRevisionName(asked)) {
    return InvalidArgument(fmt::format(
        "{} '{}' is not a revision: give a branch, tag or commit name (no '.' or '..' parts, "
        "not an absolute path)",
        knob, revision));
  }
  std::string folder = "models--" + repo_id;
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at)) {
    folder.replace(at, 1, "--");
  }
  const std::filesystem::path repo = HfHubCacheDir() / folder;
  std::error_code ec;
  if (!std::filesystem::is_directory(repo, ec)) {
    why =
        fmt::format("the Hugging Face cache '{}' holds no {}", repo.parent_path().string(), folder);
    return std::optional<HfSnapshot>();
  }
  std::string commit = asked;
  const std::filesystem::path ref = repo / "refs" / asked;
  if (std::filesystem::is_regular_file(ref, ec)) {
    KVTOPO_ASSIGN_OR_RETURN(commit, ReadTextFile(ref, 4096, "Hugging Face cache ref"));
  }
  const std::filesystem::path dir = repo / "snapshots" / commit;
  if (commit.empty() || commit.find('/') != std::string::npos || commit == "." || commit == ".." ||
      !std::filesystem::is_directory(dir, ec)) {
    why = fmt::format(
        "the Hugging Face cache '{}' holds no snapshot of revision '{}'{}", repo.string(), asked,
        commit == asked ? std::string() : fmt::format(" (refs/{} names '{}')", asked, commit));
    return std::optional<HfSnapshot>();
  }
  return std::optional<HfSnapshot>(HfSnapshot{dir, commit, asked});
}

}  // namespace kvtopo::internal
