// The fields of a tick's metadata, the Float64Array a tick resolves with.
#pragma once

namespace sightline::addon {

// The fields of a tick's metadata (finishTick), in order: the tick, the packets, the generation of
// the output views, then the stats. Exported as `tickMetaFields`; the package checks its own list
// against it when it loads.
inline constexpr const char* kTickMetaFields[] = {
    "tick", "count", "views", "served", "skippedNotDue", "skippedAvatarGone", "skippedOutsideRegion", "candidates",
    "examined", "eligible", "records", "newGhosts", "despawns", "bytes", "ghostTableFull", "pressureEvictions",
    "hiddenDepartures", "selfRecords", "teleports", "teleportDepartures", "subscriptionChanges", "events", "eventBytes", "kinds", "attributes", "attributeBytes", "entities",
    "outsideRegion", "denseCells", "odometerMicros",
    "snapshotMicros", "passMicros",
};

}  // namespace sightline::addon
