#include "coordinator/actions/slurm_actuator.h"

#include <cctype>
#include <utility>

namespace gdrmesh {

namespace {

// Where the next " Key=" field starts at or after `from` (npos: none).
size_t nextSlurmField(const std::string& line, size_t from) {
  for (size_t i = line.find(' ', from); i != std::string::npos; i = line.find(' ', i + 1)) {
    size_t j = i + 1;
    if (j >= line.size() || !std::isupper(static_cast<unsigned char>(line[j]))) continue;
    while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) != 0)) ++j;
    if (j < line.size() && line[j] == '=') return i;
  }
  return std::string::npos;
}

// The value of " Key=" in the line ("" when absent); `spaces`: it runs to the next field.
std::string slurmField(const std::string& line, const std::string& key, bool spaces) {
  size_t at = line.rfind(key + "=", 0) == 0 ? 0 : line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  if (at != 0) ++at;
  const size_t start = at + key.size() + 1;
  const size_t end = spaces ? nextSlurmField(line, start) : line.find(' ', start);
  std::string v = line.substr(start, end == std::string::npos ? std::string::npos : end - start);
  while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back())) != 0) v.pop_back();
  return v;
}

}  // namespace

Result<SlurmNodeLine> parseSlurmNodeLine(const std::string& line) {
  SlurmNodeLine n;
  n.name = slurmField(line, "NodeName", false);
  if (n.name.empty()) {
    return invalidArgument("scontrol show node: no NodeName= in '" + line.substr(0, 200) + "'",
                           "check that the configured scontrol is Slurm's");
  }
  n.state = slurmField(line, "State", false);
  n.reason = slurmField(line, "Reason", true);
  // "text [user@2026-11-27T01:02:03]": the user and time Slurm adds.
  if (!n.reason.empty() && n.reason.back() == ']') {
    const size_t open = n.reason.rfind(" [");
    if (open != std::string::npos) n.reason.resize(open);
  }
  if (n.reason == "(null)") n.reason.clear();
  return n;
}

NodeMark slurmMarkOf(const SlurmNodeLine& node) {
  NodeMark m;
  m.detail = "State=" + node.state + (node.reason.empty() ? "" : " Reason=" + node.reason);
  const bool out = node.state.find("DRAIN") != std::string::npos ||
                   node.state.find("DOWN") != std::string::npos ||
                   node.state.find("FAIL") != std::string::npos;
  if (!out) {
    m.owner = MarkOwner::kNone;
  } else if (node.reason.rfind(kGdrmeshReasonPrefix, 0) == 0 &&
             node.state.find("DOWN") == std::string::npos) {
    m.owner = MarkOwner::kGdrmesh;
  } else {
    m.owner = MarkOwner::kOther;
  }
  return m;
}

SlurmActuator::SlurmActuator(CommandRunner& runner, std::string scontrol, double timeout_seconds)
    : runner_(runner), scontrol_(std::move(scontrol)), timeout_seconds_(timeout_seconds) {}

Result<NodeMark> SlurmActuator::inspect(const std::string& node) {
  const std::vector<std::string> argv = {scontrol_, "show", "node", "-o", node};
  GDR_ASSIGN_OR_RETURN(CommandOutput out, runner_.run(argv, timeout_seconds_));
  if (out.exit_code != 0) {
    std::string why = out.err.empty() ? out.out : out.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return notFound(describeArgv(argv) + ": exit " + std::to_string(out.exit_code) + ": " + why,
                    "name the worker after its Slurm node (the worker's --name), or check "
                    "that slurmctld answers");
  }
  std::string line = out.out.substr(0, out.out.find('\n'));
  GDR_ASSIGN_OR_RETURN(SlurmNodeLine parsed, parseSlurmNodeLine(line));
  return slurmMarkOf(parsed);
}

std::vector<std::string> SlurmActuator::markArgv(const MarkRequest& request) const {
  return {scontrol_, "update", "NodeName=" + request.node, "State=DRAIN",
          "Reason=" + gdrmeshReason(request)};
}

std::vector<std::string> SlurmActuator::clearArgv(const std::string& node) const {
  return {scontrol_, "update", "NodeName=" + node, "State=RESUME"};
}

Status SlurmActuator::runUpdate(const std::vector<std::string>& argv) {
  GDR_ASSIGN_OR_RETURN(CommandOutput out, runner_.run(argv, timeout_seconds_));
  if (out.exit_code != 0) {
    std::string why = out.err.empty() ? out.out : out.err;
    while (!why.empty() && why.back() == '\n') why.pop_back();
    return unavailable(describeArgv(argv) + ": exit " + std::to_string(out.exit_code) + ": " + why,
                       "run the coordinator as a Slurm operator (SlurmUser or an AdminLevel "
                       "of Operator) on a host that reaches slurmctld");
  }
  return Status::okStatus();
}

Status SlurmActuator::mark(const MarkRequest& request) {
  return runUpdate(markArgv(request));
}

Status SlurmActuator::clear(const std::string& node) {
  return runUpdate(clearArgv(node));
}

std::string SlurmActuator::describeMark(const MarkRequest& request) const {
  return describeArgv(markArgv(request));
}

std::string SlurmActuator::describeClear(const std::string& node) const {
  return describeArgv(clearArgv(node));
}

}  // namespace gdrmesh
