// World configuration: authored values (meters, seconds, bytes) and everything derived from them.
// Mirrors lib/config.ts; both validate the same rules with the same error codes and agree on the
// protocol hash (tests compare them field by field).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sightline {

constexpr uint32_t kProtocolVersion = 2;
constexpr uint32_t kHeaderBytes = 16;        // docs/wire-format.md
constexpr uint32_t kRecordBytes = 12;        // update record without fields: u32 wire id + u64 packed position;
                                             // Config::recordBytes adds the fields' bytes
constexpr uint32_t kMaxFieldBits = 64;       // the fields of an update record together
constexpr uint32_t kMaxOneFieldBits = 31;    // one field: its values are Int32 by slot, 0 to 2^bits - 1
constexpr uint32_t kMaxFieldNameLength = 32;
constexpr uint32_t kMaxAttributeBytes = 255; // an attribute entry's length is one byte
constexpr uint32_t kKindRecordBytes = 6;     // kind record: u32 wire id + u16 kind
constexpr uint32_t kAttributeHeaderBytes = 9;  // attribute entry before its bytes: u32 id, u32 version, u8 length
constexpr uint32_t kAttributeCopySlack = 8;    // how far the pass's copy of an attribute entry may write past its end (sections.h)
constexpr uint32_t kSectionCountBytes = 2;   // the u16 count that opens the kinds and the attributes sections
constexpr uint32_t kDespawnRecordBytes = 4;  // despawn record: u32 wire id
constexpr uint32_t kMaxCellRadius = 8;       // ring order and box are precomputed up to 17 x 17 cells
constexpr uint32_t kMaxCellsPerAxis = 1024;  // the snapshot clears one counter per cell each tick
constexpr uint32_t kMaxRegionMeters = 65536; // 2^26 raw: squared distances stay far below 2^63
constexpr double kMaxTickHz = 1000;         // a tick of 1 ms at the least
constexpr uint32_t kMaxPayloadBytes = 65507; // largest UDP payload over IPv4
constexpr int kBandCount = 64;               // band = ilog2(squared distance in raw units), 0..63

// One authored fast field (an update record carries it after the position). Absent optionals take
// their defaults: min 0, max 2^bits - 1, weight 1 m.
struct FieldInput {
  std::string name;
  double bits = 0;
  std::optional<double> min, max, weight;  // declared units; weight in meters
};

// Authored values. Units: meters, meters per second, hertz, bytes, ticks.
struct ConfigInput {
  double regionSize = 4096;      // m, power of two
  double verticalExtent = 1024;  // m, z in [-extent/2, extent/2)
  double viewRadius = 256;       // m
  double maxSpeed = 40;          // m/s
  double tickHz = 20;            // Hz
  double cellSize = 0;           // m; 0 = derive (largest power of two <= viewRadius / 2)
  double payloadBytes = 1200;    // bytes per packet (QUIC's minimum datagram size; fits a 1500 MTU)
  double eventReserveBytes = 0;  // bytes held back for events
  double walkCap = 256;          // candidates examined per viewer before the walk stops
  double ghostCap = 256;         // nearest candidates eligible for the ghost table
  double graceTicks = 10;        // a ghost not stamped for this many of its viewer's passes is evicted
  double denseCellThreshold = 512;  // a cell with at least this many entities gets a sub-grid
  double subGridDivisions = 8;   // sub-cells per axis in a dense cell (power of two)
  double newDrift = -1;          // m; drift given to a candidate the client does not hold (-1 = view radius)
  std::vector<double> bandWeights;  // optional, one per band (64); default 1/d
  std::vector<FieldInput> fields;   // fast fields, in record order; at most 64 bits together
  double attributeBytes = 0;        // largest attribute string per entity, bytes (0: no attributes)
  double attributeRepeatPasses = 20;  // viewers without acks: a held ghost's attributes again every K passes (0: never)
  double attributeShare = 0.25;     // the kinds' and attributes' floor, a share of a packet's state bytes
};

// A validated fast field. Its raw values are integers 0 to 2^bits - 1 (the game writes them by
// slot; values outside are clamped when the snapshot reads them); value = min + raw x (max - min) /
// (2^bits - 1) in declared units. A change of the raw value between two ticks adds weightRaw to the
// entity's odometer.
struct FieldSpec {
  std::string name;
  uint32_t bits;
  uint32_t offset;    // bit offset within the record's fields (little-endian, from bit 0 of its first byte)
  double min, max;
  double weight;      // m
  uint32_t weightRaw;  // raw units
};

// Derived, all integers. Raw units unless named otherwise.
struct Config {
  ConfigInput input;
  int64_t regionRaw;
  int regionShift;
  int64_t verticalRaw;
  int zBits;
  int64_t viewRadiusRaw;
  uint64_t viewRadiusSq;
  int64_t cellRaw;
  int cellShift;
  uint32_t cellsPerAxis;
  uint32_t cellCount;
  uint32_t cellRadius;
  int64_t maxMovePerTickRaw;
  uint32_t payloadBytes;
  uint32_t eventReserveBytes;
  uint32_t slotsPerPacket;
  uint32_t walkCap;
  uint32_t ghostCap;
  uint32_t ghostTableCapacity;  // 2 x ghostCap: eligible ghosts plus those inside the grace window
  uint32_t graceTicks;
  uint32_t denseCellThreshold;
  uint32_t subGridDivisions;
  int subShift;                 // log2 of the sub-cell size in raw units
  uint32_t newDrift;            // raw units
  int quantShift;               // low bits dropped from each coordinate on the wire (0 at defaults)
  std::array<uint32_t, kBandCount> bandWeights;
  std::vector<FieldSpec> fields;
  uint32_t fieldBits;           // the fields' bits together, at most 64
  uint32_t fieldBytes;          // ceil(fieldBits / 8): what an update record carries after the position
  uint32_t recordBytes;         // kRecordBytes + fieldBytes
  uint32_t minPayloadBytes;     // the smallest payload (config or viewer): header, event reserve and
                                // one record, or the largest attribute entry in its section
  uint32_t attributeBytes;      // 0: no attributes
  uint32_t attributeRepeatPasses;
  uint32_t attributeShareQ16;   // attributeShare x 65536, rounded: 1 to 65535
  uint32_t protocolHash;
};

// Validates and derives. Throws CoreError with an ERR_SIGHTLINE_CONFIG_* code.
Config buildConfig(const ConfigInput& input);

// FNV-1a 32-bit over the little-endian bytes of everything that affects decoding
// (docs/wire-format.md, Versioning): the position layout, the record sizes, the fields and the
// largest attribute.
uint32_t protocolHash(int64_t regionRaw, int64_t verticalRaw, int quantShift, const std::vector<FieldSpec>& fields = {},
                      uint32_t attributeBytes = 0);

// Default band weights: 1/d, halving per doubling of distance. band b covers squared distances
// [2^b, 2^(b+1)) raw^2, i.e. distances near 2^(b/2) raw, so weight = round(2^31 / 2^(b/2)), at least 1.
std::array<uint32_t, kBandCount> defaultBandWeights();

}  // namespace sightline
