#include "cli/suggest.h"

#include <algorithm>

namespace gdrmesh::cli {

size_t editDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance, three rows.
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      }
    }
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

std::string nearestName(const std::string& word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_d = 0;
  for (const auto& n : names) {
    const size_t d = editDistance(word, n);
    if (best.empty() || d < best_d) {
      best = n;
      best_d = d;
    }
  }
  if (best.empty() || best_d > 2 || best_d * 2 >= word.size()) return "";
  return best;
}

std::optional<std::string> unknownCommandMessage(const CLI::App& app,
                                                 const std::vector<std::string>& args) {
  const CLI::App* level = &app;
  std::string path = app.get_name();
  for (const auto& word : args) {
    if (word.empty() || word[0] == '-') return std::nullopt;  // options: CLI11's own message
    const CLI::App* sub = nullptr;
    std::vector<std::string> names;
    for (const CLI::App* s : level->get_subcommands([](const CLI::App*) { return true; })) {
      names.push_back(s->get_name());
      if (s->check_name(word)) sub = s;
    }
    if (sub != nullptr) {
      level = sub;
      path += " " + sub->get_name();
      continue;
    }
    // A positional argument where this level takes one is not a command.
    if (names.empty() || level->get_require_subcommand_min() == 0) return std::nullopt;
    std::string msg = path + ": unknown command '" + word + "'";
    const std::string near = nearestName(word, names);
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    std::sort(names.begin(), names.end());
    msg += "\n  commands:";
    for (const auto& n : names) msg += " " + n;
    msg += "\n  fix: `" + path + " --help` describes each";
    return msg;
  }
  return std::nullopt;
}

}  // namespace gdrmesh::cli
