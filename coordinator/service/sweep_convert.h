// Sweep messages: wire <-> domain, at the service edge (the only place that sees both).
#pragma once

#include <string>

#include "common/status.h"
#include "coordinator/orchestrator/sweep_manager.h"
#include "coordinator/orchestrator/sweep_types.h"
#include "gdrmesh/v1/gdrmesh.pb.h"

namespace gdrmesh::convert {

// Validates as it converts: errors name the field (as the CLI spells it) and the fix.
Result<SweepSpec> fromProto(const v1::SweepSpec& in);
void toProto(const SweepSpec& in, v1::SweepSpec* out);
void toProto(const SweepProgress& in, v1::SweepProgress* out);
void toProto(const PairVerdict& in, v1::PairVerdict* out);
void toProto(const Suspect& in, v1::Suspect* out);
void toProto(const SweepReportData& in, v1::SweepReport* out);
// GetSweep's and JudgeSweep's requests: which verdicts and results, which page.
Result<SweepReportQuery> fromProto(const v1::SweepIdRequest& in);
Status fromProto(const v1::SweepReportPage& in, VerdictFilter* filter, VerdictPage* page);

// Wire -> domain for clients that render reports (`gdrmesh report`, `sweep show --matrix`).
// Lenient: an unknown state or verdict keeps the default; the stored spec is converted with
// fromProto above, and when it no longer validates `spec_error` says why (the report keeps the
// pattern and the config text, which are all it needs).
SweepProgress fromProto(const v1::SweepProgress& in);
PairVerdict fromProto(const v1::PairVerdict& in);
Suspect fromProto(const v1::Suspect& in);
SweepReportData fromProto(const v1::SweepReport& in, std::string* spec_error);

// SweepCodec on protobuf's JSON mapping of v1.SweepSpec: how builds before the domain encoding
// stored specs. Read by StoredSweepCodec for those rows (the fuzzers check that they still are).
class ProtoJsonSweepCodec final : public SweepCodec {
 public:
  std::string encode(const SweepSpec& spec) const override;
  Result<SweepSpec> decode(const std::string& text) const override;
};

// The stored spec of a sweep: written in the domain encoding (coordinator/encoding/sweep_json.h,
// docs/json.md), the form `sweep show -o json` prints; read in it, or in protobuf's JSON mapping
// for the rows older builds wrote (ProtoJsonSweepCodec), so that renaming a proto field never
// changes how a stored row reads.
class StoredSweepCodec final : public SweepCodec {
 public:
  std::string encode(const SweepSpec& spec) const override;
  Result<SweepSpec> decode(const std::string& text) const override;
};

}  // namespace gdrmesh::convert
