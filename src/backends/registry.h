// The backends this build has, by name. Each backend's folder defines one
// function returning its BackendEntry (CpuBackendEntry, ...), and its CMake
// block names it (pocket_register_backend in CMakeLists.txt); CMake writes
// the list of the enabled ones, so no code outside a backend's folder
// names it. ModelOptions.backend picks one by name, and
// `pocket inspect --devices` describes them all.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "util/status.h"

namespace pocket {

struct BackendEntry {
  std::string name;  // "cpu", "opencl", "reference"
  // Makes the backend for a loaded model. Errors name what is missing (no
  // device, weights that do not fit) without the backend's name, which the
  // caller adds.
  StatusOr<std::unique_ptr<Backend>> (*create)(const BackendContext& context) = nullptr;
  // The backend's devices, one or more lines each ending in '\n', starting
  // with the backend's name padded to 12 columns; for a backend with no
  // usable device, the reason.
  std::string (*describe_devices)() = nullptr;
};

// The registered backends, in the order CMake lists them (cpu first).
// Thread-safe.
const std::vector<BackendEntry>& RegisteredBackends();
// Their names, ", "-separated.
std::string RegisteredBackendNames();
// The entry named `name`; InvalidArgument listing the names this build has
// when there is none by that name.
StatusOr<const BackendEntry*> FindBackend(const std::string& name);
// Every registered backend's DescribeDevices lines.
std::string DescribeBackendDevices();

}  // namespace pocket
