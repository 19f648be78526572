// Unknown commands: `gdrmesh wokers` says which word it did not know and the nearest command
// (`workers`), instead of CLI11's "The following arguments were not expected".
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gdrmesh::cli {

// Edit distance (insertions, deletions, substitutions and swaps of neighbours count 1 each).
size_t editDistance(const std::string& a, const std::string& b);

// The name nearest to `word` when it is close enough to be a typo (at most 2 edits, and fewer
// than half its length); "" otherwise.
std::string nearestName(const std::string& word, const std::vector<std::string>& names);

// When `args` (argv without the program) name a subcommand that `app` does not have at the
// level where one is required, the message for it: "unknown command 'wokers'; did you mean
// 'workers'? ..." naming the commands of that level. nullopt when the words are known.
std::optional<std::string> unknownCommandMessage(const CLI::App& app,
                                                 const std::vector<std::string>& args);

}  // namespace gdrmesh::cli
