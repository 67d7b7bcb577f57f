// The local Hugging Face hub cache, where the engine finds a repo id's files without the network
// (huggingface_hub's cache layout: <cache>/models--<org>--<name>/{refs,snapshots}).
// docs/profiles.md, "Hugging Face repo ids", gives the rules and their sources.
//
// Thread safety: reads the process environment and the file system; no state of its own.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kvtopo/status.h"

namespace kvtopo::internal {

// Whether `model` is shaped like a Hugging Face repo id (huggingface_hub's validate_repo_id):
// "name" or "org/name", each part of letters, digits, '_', '-' and '.', starting and ending with a
// letter, digit or '_', without "--" or "..", at most 96 characters in all.
bool IsHfRepoId(std::string_view model);

// The engine's remote GGUF name `org/name:QUANT` (gguf_utils.is_remote_gguf): the repo part of
// letters, digits, '.', '_' and '-' (each part starting with a letter or digit), and QUANT one of
// gguf's GGMLQuantizationType names, optionally with a size suffix (_M, _S, _L, _XL, _XS, _XXS),
// or any dash-prefixed name ending in one (UD-Q4_K_XL). Sets `repo` and `quant` when it is one.
bool SplitRemoteGguf(std::string_view model, std::string& repo, std::string& quant);

// The hub cache directory as huggingface_hub resolves it from the environment: HF_HUB_CACHE, else
// HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, with HF_HOME defaulting to
// ${XDG_CACHE_HOME:-~/.cache}/huggingface; '~' and $VAR / ${VAR} expanded as Python's
// os.path.expanduser and os.path.expandvars do.
std::filesystem::path HfHubCacheDir();

// Whether VLLM_USE_MODELSCOPE is "true" in any case (vllm/envs.py): the engine then fetches repo
// ids from ModelScope's hub, not Hugging Face's.
bool EngineUsesModelScope();

struct HfSnapshot {
  std::filesystem::path dir;  // <cache>/models--<org>--<name>/snapshots/<commit>
  std::string commit;         // the snapshot's folder name
  std::string revision;       // the revision asked for ("main" when none)
};

// The cached snapshot of `repo_id` at `revision` (empty: "main"), resolved as huggingface_hub's
// try_to_load_from_cache and offline snapshot_download do: refs/<revision> names the commit when
// it exists, else the revision is taken as the commit; snapshots/<commit> must exist. Returns
// nullopt with `why` set (a sentence naming what is missing) when the cache does not hold it;
// an InvalidArgument for a revision that is not a relative name ("--revision" or `knob` names it).
Result<std::optional<HfSnapshot>> FindHfSnapshot(const std::string& repo_id,
                                                 const std::string& revision, std::string_view knob,
                                                 std::string& why);

}  // namespace kvtopo::internal
