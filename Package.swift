// swift-tools-version:5.9
// The Swift package: module `Pocket` over the C ABI (include/pocket/pocket.h).
//
// On Linux it links the libpocket.so that tools/setup.sh builds into build/
// (another folder through the POCKET_LIB_DIR environment variable). On
// Apple platforms it uses build/Pocket.xcframework, which
// tools/build-xcframework.sh makes with Xcode (docs/apps.md).
import Foundation
import PackageDescription

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().path
let libDir = ProcessInfo.processInfo.environment["POCKET_LIB_DIR"] ?? root + "/build"

#if os(Linux)
let cTarget: Target = .systemLibrary(name: "CPocket", path: "src/swift/CPocket")
let linkFlags: [LinkerSetting] = [
  .unsafeFlags(["-L", libDir, "-Xlinker", "-rpath", "-Xlinker", libDir])
]
#else
let cTarget: Target = .binaryTarget(name: "CPocket", path: "build/Pocket.xcframework")
let linkFlags: [LinkerSetting] = [.linkedLibrary("c++")]
#endif

let package = Package(
  name: "Pocket",
  platforms: [.macOS(.v12), .iOS(.v15)],
  products: [.library(name: "Pocket", targets: ["Pocket"])],
  targets: [
    cTarget,
    .target(name: "Pocket", dependencies: ["CPocket"], path: "src/swift/Pocket",
            linkerSettings: linkFlags),
    .testTarget(name: "PocketTests", dependencies: ["Pocket"], path: "tests/swift/PocketTests"),
  ]
)
