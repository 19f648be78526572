// JSON forms of results and inventories: the stable output of `-o json` and of the status
// page's API. Documented field by field in docs/json.md; fields are only ever added.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "common/inventory.h"
#include "common/result.h"
#include "common/status.h"

namespace gdrmesh {

nlohmann::json toJson(const Inventory& inv);
// toJson(Inventory) read back (how the coordinator stores a worker's registered inventory). Every
// field it writes must be present with its type; errors name the field. A document of another
// form (protobuf's JSON mapping, what older builds stored) is refused, for its own reader.
Result<Inventory> inventoryFromJson(const nlohmann::json& j);
nlohmann::json toJson(const TestResult& r);
nlohmann::json toJson(const Measurement& m);
nlohmann::json toJson(const IntegrityReport& i);
nlohmann::json toJson(const EndpointRecord& e);
// The array printed by `gdrmesh workers -o json` and served at /api/workers.
nlohmann::json toJson(const std::vector<WorkerStatus>& workers);

}  // namespace gdrmesh
