#include "coordinator/orchestrator/plan_table.h"

#include <cstdint>
#include <functional>
#include <string>

namespace gdrmesh {

PlanTable::PlanTable(const std::vector<PlannedTest>& tests) {
  rows_.reserve(tests.size());
  for (const PlannedTest& t : tests) append(t);
}

size_t PlanTable::EndpointHash::operator()(const EndpointSelector& e) const {
  size_t h = std::hash<std::string>()(e.worker);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<std::string>()(e.device));
  mix(static_cast<size_t>(e.memory));
  mix(static_cast<size_t>(static_cast<int64_t>(e.gpu) + 1));
  mix(static_cast<size_t>(e.reg));
  return h;
}

bool PlanTable::EndpointEqual::operator()(const EndpointSelector& a,
                                          const EndpointSelector& b) const {
  return a.worker == b.worker && a.device == b.device && a.memory == b.memory && a.gpu == b.gpu &&
         a.reg == b.reg;
}

uint32_t PlanTable::endpointId(const EndpointSelector& e) {
  auto [it, fresh] = endpoint_ids_.try_emplace(e, static_cast<uint32_t>(endpoints_.size()));
  if (fresh) endpoints_.push_back(e);
  return it->second;
}

void PlanTable::append(const PlannedTest& t) {
  Row r;
  r.round = t.round;
  r.initiator = endpointId(t.initiator);
  r.target = endpointId(t.target);
  r.rail = t.rail.empty() ? 0 : texts_.intern(t.rail);
  r.retest_of = t.retest_of.empty() ? 0 : texts_.intern(t.retest_of);
  r.bidirectional = t.bidirectional;
  r.retest = t.retest;
  r.message_size = t.message_size;
  rows_.push_back(r);
}

PlannedTest PlanTable::operator[](size_t i) const {
  const Row& r = rows_[i];
  PlannedTest t;
  t.round = r.round;
  t.initiator = endpoints_[r.initiator];
  t.target = endpoints_[r.target];
  t.message_size = r.message_size;
  t.bidirectional = r.bidirectional;
  t.rail = texts_.str(r.rail);
  t.retest = r.retest;
  t.retest_of = texts_.str(r.retest_of);
  return t;
}

}  // namespace gdrmesh
