#include "backends/registry.h"

namespace pocket {

// Written by CMake (pocket_register_backend): each enabled backend's entry.
std::vector<BackendEntry> BuiltBackendEntries();

const std::vector<BackendEntry>& RegisteredBackends() {
  static const std::vector<BackendEntry> entries = BuiltBackendEntries();
  return entries;
}

std::string RegisteredBackendNames() {
  std::string names;
  for (const BackendEntry& e : RegisteredBackends()) names += (names.empty() ? "" : ", ") + e.name;
  return names;
}

StatusOr<const BackendEntry*> FindBackend(const std::string& name) {
  for (const BackendEntry& e : RegisteredBackends()) {
    if (e.name == name) return &e;
  }
  return Errorf(StatusCode::kInvalidArgument,
                "backend '%s' is not built into this library; available: %s", name.c_str(),
                RegisteredBackendNames().c_str());
}

std::string DescribeBackendDevices() {
  std::string out;
  for (const BackendEntry& e : RegisteredBackends()) {
    out += e.describe_devices();
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace pocket
