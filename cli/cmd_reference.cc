// `gdrmesh reference`: docs/reference.md, made from the program itself: every subcommand's
// --help text (CLI11's own, so every option, default and check is there) and every key of the
// cluster config (the table the parser checks keys against). deploy/gen-reference.sh writes it;
// the docs_reference test fails when the file differs from what the binary prints.
#include <cstdio>
#include <string>

#include "cli/cli.h"
#include "coordinator/config/config_keys.h"

namespace gdrmesh::cli {
namespace {

// Pipes would break a table cell; the meanings use none, but keep the table sound if one does.
std::string referenceCell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// The --help text of `app` as `gdrmesh ... --help` prints it. Through the formatter: App::help()
// of the root would print the selected subcommand's (this one's).
std::string referenceHelpText(const CLI::App* app, const std::string& path) {
  return app->get_formatter()->make_help(app, path, CLI::AppFormatMode::Normal);
}

void appendCommandReference(const CLI::App* app, const std::string& path, std::string& out) {
  out += "### `" + path + "`\n\n";
  out += "```\n" + referenceHelpText(app, path) + "```\n\n";
  for (const CLI::App* sub : app->get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden (this command)
    appendCommandReference(sub, path + " " + sub->get_name(), out);
  }
}

std::string makeReference(const CLI::App* root) {
  std::string out =
      "# Reference\n\n"
      "Every option of every `gdrmesh` command and every key of the cluster config.\n"
      "Generated from the program (`deploy/gen-reference.sh` runs `gdrmesh reference`): do not\n"
      "edit by hand. The ctest `docs_reference` fails when this file differs from what the\n"
      "built binary prints. What the options and keys mean at length: [config.md](config.md),\n"
      "[operations.md](operations.md), [security.md](security.md) and the README.\n\n"
      "## Commands\n\n";
  out += "```\n" + referenceHelpText(root, "gdrmesh") + "```\n\n";
  for (const CLI::App* sub : root->get_subcommands({})) {
    if (sub->get_group().empty()) continue;
    appendCommandReference(sub, "gdrmesh " + sub->get_name(), out);
  }
  out +=
      "## Cluster config keys\n\n"
      "The keys the parser accepts (any other key is an error that lists these), by section.\n"
      "`schedules[].sweep` takes the keys of `sweeps[]`, `host_classes[].thresholds` those of\n"
      "`thresholds`. Defaults, ranges and the full story: [config.md](config.md).\n\n";
  std::string_view section;
  for (const ConfigKey& k : clusterConfigKeys()) {
    if (k.section != section) {
      section = k.section;
      out += "\n### " + std::string(section) + "\n\n| key | meaning |\n|-----|---------|\n";
    }
    out += "| `" + std::string(k.key) + "` | " + referenceCell(k.meaning) + " |\n";
  }
  return out;
}

}  // namespace

void registerReferenceCommand(CLI::App& app, Action* action) {
  auto* cmd = app.add_subcommand("reference", "Print docs/reference.md (every option and key)");
  cmd->group("");  // hidden: a maintainer's tool, not an operator's
  const CLI::App* root = &app;
  cmd->callback([action, root] {
    *action = [root] {
      const std::string text = makeReference(root);
      std::fwrite(text.data(), 1, text.size(), stdout);
      return std::fflush(stdout) == 0 ? kExitOk : kExitInternal;
    };
  });
}

}  // namespace gdrmesh::cli
